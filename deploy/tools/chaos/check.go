package chaos

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/sekgate/gateway/shared/money"
)

// Bounds of a hostile answer's record: the model's context window for prompt tokens and
// the request's max_tokens for output tokens (the load asks for at most 64).
const (
	contextWindow = 32768
	maxOutput     = 64
)

// Row is one scenario's outcome.
type Row struct {
	Scenario string
	What     string
	// Sent counts requests; Hostile those to the hostile upstream.
	Sent, Hostile int
	// Failed counts requests to the well-behaved model without a complete answer, other
	// than those cut by a data-plane kill (CutByKill).
	Failed, CutByKill int
	// IDs counts distinct X-Request-Ids the clients received.
	IDs int
	// RecordsExpected counts IDs answered 200; RecordsFound those with a record.
	RecordsExpected, RecordsFound int
	// MicroExpected is the price of what the well-behaved model's complete answers
	// reported, by the formula; MicroDebited what their records charged (each account's
	// ledger debits are checked against its records' prices).
	MicroExpected, MicroDebited int64
	// LedgerGap is Σ |balance − Σ ledger| over all accounts (must be "0").
	LedgerGap string
	// Spool is the data planes' total spool depth after the scenario settled.
	Spool int64
	// Verdict is PASS or FAIL; DataPlaneOnly is set when every failed check is one the
	// data-plane side of the money work must fix (usage bounds, stream validation, start
	// entries).
	Verdict       string
	DataPlaneOnly bool
	Notes         []string
	// Info describes the scenario's records beyond the checks (all of them, by result).
	Info string
}

// Report is a run's rows.
type Report struct {
	Config Config
	Rows   []Row
	// LogDir keeps the processes' logs (empty when a passing run removed them).
	LogDir string
}

// Passed reports whether every scenario passed.
func (r *Report) Passed() bool {
	for _, row := range r.Rows {
		if row.Verdict != "PASS" {
			return false
		}
	}
	return len(r.Rows) > 0
}

// PassedButDataPlane reports whether every scenario passed or failed only checks the
// data-plane side owns.
func (r *Report) PassedButDataPlane() bool {
	for _, row := range r.Rows {
		if row.Verdict != "PASS" && !row.DataPlaneOnly {
			return false
		}
	}
	return len(r.Rows) > 0
}

// Print writes the table (Markdown) and each failed check's note.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "| scenario | requests sent (hostile) | failed | X-Request-Ids | records expected / found | µSEK expected / debited | balance − Σ ledger | spool | verdict |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		failed := fmt.Sprint(row.Failed)
		if row.CutByKill > 0 {
			failed += fmt.Sprintf(" (+%d cut by the kill)", row.CutByKill)
		}
		fmt.Fprintf(w, "| %s | %d (%d) | %s | %d | %d / %d | %d / %d | %s | %d | %s |\n", row.Scenario, row.Sent, row.Hostile,
			failed, row.IDs, row.RecordsExpected, row.RecordsFound, row.MicroExpected, row.MicroDebited, row.LedgerGap, row.Spool, row.Verdict)
	}
	fmt.Fprintln(w)
	for _, row := range r.Rows {
		if row.Info != "" {
			fmt.Fprintf(w, "%s: %s\n", row.Scenario, row.Info)
		}
	}
	for _, row := range r.Rows {
		for _, n := range row.Notes {
			fmt.Fprintf(w, "\n%s: %s", row.Scenario, n)
		}
	}
	fmt.Fprintln(w)
	if r.LogDir != "" {
		fmt.Fprintf(w, "\nprocess logs: %s\n", r.LogDir)
	}
}

// check settles the scenario (spools drained, records arrived) and measures it.
func (s *stack) check(ctx context.Context, sc scenario, results []result, killed int, faultAt, recovered time.Time) Row {
	row := Row{Scenario: sc.name, What: sc.what, Sent: len(results), LedgerGap: "?"}
	fail := func(dataPlane bool, format string, args ...any) {
		note := fmt.Sprintf(format, args...)
		if dataPlane {
			note += " [data-plane side]"
		}
		row.Notes = append(row.Notes, note)
		if !dataPlane {
			row.DataPlaneOnly = false
		}
	}
	row.DataPlaneOnly = true
	cutByKill := func(r result) bool {
		return killed >= 0 && r.Node == killed && r.Start.Before(recovered) && !r.End.Before(faultAt)
	}

	seen := map[string]int{}
	var ok200, good, all, hostile []string
	expect := map[string]int64{}
	garbageOK := 0
	for _, r := range results {
		if r.Hostile != "" {
			row.Hostile++
		}
		if r.ID != "" {
			seen[r.ID]++
			all = append(all, r.ID)
			if r.Hostile != "" {
				hostile = append(hostile, r.ID)
			}
		}
		if r.Status == 200 && r.ID != "" {
			ok200 = append(ok200, r.ID)
		}
		if r.Hostile == "garbage-events" && r.Stream && r.Status == 200 && r.Done {
			garbageOK++
		}
		if r.Hostile != "" {
			continue
		}
		switch {
		case r.Status == 200 && r.Complete:
			good = append(good, r.ID)
			expect[r.ID] = money.Price(r.Prompt, r.Completion, InOre, OutOre)
			row.MicroExpected += expect[r.ID]
		case cutByKill(r):
			row.CutByKill++
		default:
			row.Failed++
		}
	}
	row.IDs = len(seen)
	row.RecordsExpected = len(ok200)
	for id, n := range seen {
		if n > 1 {
			fail(false, "X-Request-Id %s was given to %d requests", id, n)
		}
	}

	// Settle: every live node's spool drained and the records of every 200 arrived.
	found := map[string]bool{}
	deadline := time.Now().Add(s.cfg.Settle)
	lastCount, lastChange := -1, time.Now()
	for {
		row.Spool = 0
		for _, n := range s.dps {
			d := s.spoolDepth(ctx, n)
			if d < 0 {
				d = 1 << 40 // no answer: not drained
			}
			row.Spool += d
		}
		rows, err := s.db.Query(ctx, `SELECT request_id FROM request_records WHERE request_id = ANY($1)`, ok200)
		if err == nil {
			for rows.Next() {
				var id string
				if rows.Scan(&id) == nil {
					found[id] = true
				}
			}
			rows.Close()
		}
		if len(found) != lastCount {
			lastCount, lastChange = len(found), time.Now()
		}
		// Done when drained and every record is in - or drained and nothing has arrived
		// for a while (a record that is missing then stays missing).
		drained := row.Spool == 0 && (len(found) == len(ok200) || time.Since(lastChange) > 3*time.Second)
		if drained || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		sleep(ctx, 250*time.Millisecond)
	}
	if row.Spool >= 1<<40 {
		row.Spool = -1
	}
	row.RecordsFound = len(found)

	if row.Spool != 0 {
		fail(false, "spools not drained after %s: depth %d", s.cfg.Settle, row.Spool)
	}

	// Records missing for IDs answered 200, by cause.
	unboundedHostile := 0
	if missing := len(ok200) - len(found); missing > 0 {
		byID := map[string]result{}
		for _, r := range results {
			byID[r.ID] = r
		}
		rejected := map[string]string{}
		var ids []string
		for _, id := range ok200 {
			if !found[id] {
				ids = append(ids, id)
			}
		}
		rows, err := s.db.Query(ctx, `SELECT request_id, reason FROM rejected_records WHERE request_id = ANY($1)`, ids)
		if err == nil {
			for rows.Next() {
				var id, reason string
				if rows.Scan(&id, &reason) == nil {
					rejected[id] = reason
				}
			}
			rows.Close()
		}
		var byRejection, byKill, lost []string
		for _, id := range ids {
			switch r := byID[id]; {
			case rejected[id] != "":
				byRejection = append(byRejection, fmt.Sprintf("%s (%s: %s)", id, r.Hostile, trim(rejected[id], 60)))
			case cutByKill(r):
				byKill = append(byKill, id)
			default:
				lost = append(lost, fmt.Sprintf("%s (%s)", id, r.Hostile))
			}
		}
		unboundedHostile = len(byRejection)
		if len(byRejection) > 0 {
			fail(true, "%d answers were served (200) with usage the control plane had to reject, so they have no record; the data plane must bound usage at the upstream: %s",
				len(byRejection), sample(byRejection))
		}
		if len(byKill) > 0 {
			fail(true, "%d streams answered 200 and cut by the node kill have no record; the data plane must spool a start entry when it commits a stream: %s",
				len(byKill), sample(byKill))
		}
		if len(lost) > 0 {
			fail(false, "%d records lost: %s", len(lost), sample(lost))
		}
	}

	// The hostile upstream: records within bounds, garbage never relayed as success.
	var beyond int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM request_records WHERE request_id = ANY($1)
		AND (prompt_tokens > $2 OR completion_tokens > $3)`, hostile, contextWindow, maxOutput).Scan(&beyond); err == nil && beyond > 0 {
		fail(true, "%d hostile answers recorded beyond the context window or the request's output limit", beyond)
	}
	if garbageOK > 0 {
		fail(true, "%d streams of non-JSON events were relayed as success (200 through [DONE])", garbageOK)
	}

	// Failed requests to the well-behaved model. A 402 after hostile answers whose usage
	// was not bounded is the node's local spend view counting their unbounded prices.
	if row.Failed > 0 {
		var samples []string
		refused := 0
		for _, r := range results {
			if r.Hostile == "" && !(r.Status == 200 && r.Complete) && !cutByKill(r) {
				if r.Status == 402 {
					refused++
				}
				if len(samples) < 3 {
					samples = append(samples, fmt.Sprintf("status %d err %q", r.Status, r.Err))
				}
			}
		}
		if unbounded := unboundedHostile + beyond; refused > 0 && unbounded > 0 {
			fail(true, "%d requests refused with 402: the node counted %d hostile answers' unbounded prices as the accounts' spend", refused, unbounded)
		} else if refused > 0 {
			fail(false, "%d requests refused with 402", refused)
		}
		if other := row.Failed - refused; other > 0 {
			fail(false, "%d requests to the well-behaved model failed, e.g. %s", other, strings.Join(samples, "; "))
		}
	}

	// Money: what the well-behaved model's answers reported is what their records charged
	// (a record is the proof of its charge; the ledger debits an account once per batch,
	// checked below against the records).
	debited := map[string]int64{}
	if rows, err := s.db.Query(ctx, `SELECT request_id, price_micro_sek FROM request_records WHERE request_id = ANY($1)`, good); err == nil {
		for rows.Next() {
			var id string
			var amt int64
			if rows.Scan(&id, &amt) == nil {
				debited[id] = amt
				row.MicroDebited += amt
			}
		}
		rows.Close()
	} else {
		fail(false, "read charges: %v", err)
	}
	var wrong []string
	for _, id := range good {
		if debited[id] != expect[id] {
			wrong = append(wrong, fmt.Sprintf("%s charged %d, answer priced %d", id, debited[id], expect[id]))
		}
	}
	sort.Strings(wrong)
	if len(wrong) > 0 {
		fail(false, "%d answers charged other than their usage prices: %s", len(wrong), sample(wrong))
	}
	if err := s.db.QueryRow(ctx, `SELECT COALESCE(sum(abs(b.balance_micro_sek::numeric - COALESCE(l.total, 0))), 0)::text
		FROM account_balances b LEFT JOIN (SELECT account_id, sum(amount_micro_sek) AS total FROM ledger GROUP BY account_id) l
		USING (account_id)`).Scan(&row.LedgerGap); err != nil {
		fail(false, "read balance − Σ ledger: %v", err)
	} else if row.LedgerGap != "0" {
		fail(false, "balance − Σ ledger is %s µSEK", row.LedgerGap)
	}
	// Every account's debits are exactly its records' prices: none charged twice or missed.
	var mischarged int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM accounts a
		WHERE COALESCE((SELECT -sum(amount_micro_sek) FROM ledger l WHERE l.account_id = a.id AND l.kind = 'debit'), 0)
			<> COALESCE((SELECT sum(price_micro_sek) FROM request_records r WHERE r.account_id = a.id), 0)`).Scan(&mischarged); err != nil {
		fail(false, "read debits: %v", err)
	} else if mischarged > 0 {
		fail(false, "%d accounts debited other than their records' prices", mischarged)
	}

	// Every record of the scenario's IDs, by result, and what the control plane refused.
	var nrec, interrupted, hostileRecs, rejectedN int64
	var total int64
	if err := s.db.QueryRow(ctx, `SELECT count(*), COALESCE(sum(price_micro_sek), 0)::bigint,
			count(*) FILTER (WHERE result = 'interrupted'), count(*) FILTER (WHERE request_id = ANY($2))
		FROM request_records WHERE request_id = ANY($1)`, all, hostile).Scan(&nrec, &total, &interrupted, &hostileRecs); err == nil {
		_ = s.db.QueryRow(ctx, `SELECT count(*) FROM rejected_records WHERE request_id = ANY($1)`, all).Scan(&rejectedN)
		row.Info = fmt.Sprintf("%d records in all (%d of hostile answers, %d interrupted), %d µSEK debited in all; %d records refused by the control plane",
			nrec, hostileRecs, interrupted, total, rejectedN)
	}

	if len(row.Notes) == 0 {
		row.Verdict, row.DataPlaneOnly = "PASS", false
	} else {
		row.Verdict = "FAIL"
	}
	return row
}

func trim(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func sample(list []string) string {
	if len(list) > 3 {
		return strings.Join(list[:3], "; ") + "; …"
	}
	return strings.Join(list, "; ")
}
