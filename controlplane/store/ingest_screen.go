package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sekgate/gateway/shared/usage"
)

// dayKey names a row of usage_daily: an account's usage of one model on one day (UTC).
type dayKey struct{ account, day, model string }

func dayKeyOf(r *usage.Record) dayKey {
	return dayKey{r.AccountID, r.TS.UTC().Format(time.DateOnly), r.Model}
}

func compareDayKeys(a, b dayKey) int {
	if c := strings.Compare(a.account, b.account); c != 0 {
		return c
	}
	if c := strings.Compare(a.day, b.day); c != 0 {
		return c
	}
	return strings.Compare(a.model, b.model)
}

// dayUsage is what a group of records adds to one usage_daily row.
type dayUsage struct {
	Requests, PromptTokens, CompletionTokens, PriceMicroSEK int64
}

// add adds r to u and reports success; when a sum would leave the int64 range it leaves u
// unchanged and reports failure.
func (u *dayUsage) add(r *usage.Record) bool {
	w := *u
	if !addChecked(&w.Requests, 1) || !addChecked(&w.PromptTokens, r.PromptTokens) ||
		!addChecked(&w.CompletionTokens, r.CompletionTokens) || !addChecked(&w.PriceMicroSEK, r.PriceMicroSEK) {
		return false
	}
	*u = w
	return true
}

// dayTotals sums records per usage_daily row.
type dayTotals map[dayKey]*dayUsage

// add adds r to its row and reports success; when a sum would leave the int64 range the
// row is unchanged and add reports failure.
func (t dayTotals) add(r *usage.Record) bool {
	k := dayKeyOf(r)
	u := t[k]
	if u == nil {
		u = new(dayUsage)
		t[k] = u
	}
	return u.add(r)
}

// screened is what screen lets through: the accepted records, sorted by request ID, and
// the accounts among them that exist (their balance rows are locked).
type screened struct {
	records []usage.Record
	known   map[string]bool
}

// screen checks the candidates against the catalogue's prices and the int64 range of
// every sum they feed, and locks the balance rows of their accounts (in account order, the
// first locks the batch takes). It returns what passed and every rejection (bad
// included).
func (s *Store) screen(ctx context.Context, tx pgx.Tx, cands []candidate, bad []rejection) (screened, []rejection, error) {
	rej := slices.Clone(bad)
	prices, err := modelPrices(ctx, tx, cands)
	if err != nil {
		return screened{}, nil, err
	}
	priced := cands[:0:0]
	for _, c := range cands {
		if code, detail := checkPrice(c.rec, prices[c.rec.Model]); code != "" {
			rej = append(rej, reject(c.rec, c.raw, code, "%s", detail))
			continue
		}
		priced = append(priced, c)
	}
	balance, err := lockAccountBalances(ctx, tx, priced)
	if err != nil {
		return screened{}, nil, err
	}

	// A debit that would take a balance below the int64 minimum is refused, as is a record
	// that would overflow its daily aggregate.
	days := dayTotals{}
	debits := map[string]int64{}
	out := screened{records: make([]usage.Record, 0, len(priced)), known: make(map[string]bool, len(balance))}
	for _, c := range priced {
		r := c.rec
		if b, ok := balance[r.AccountID]; ok {
			d := debits[r.AccountID]
			if !addChecked(&b, -r.PriceMicroSEK) || !addChecked(&d, r.PriceMicroSEK) {
				rej = append(rej, reject(r, c.raw, RejectOverflow, "the balance of %s or the batch's debits would leave the int64 range", r.AccountID))
				continue
			}
			balance[r.AccountID], debits[r.AccountID] = b, d
			out.known[r.AccountID] = true
		}
		if !days.add(r) {
			rej = append(rej, reject(r, c.raw, RejectOverflow, "the batch's daily sums for %s would leave the int64 range", r.AccountID))
			continue
		}
		out.records = append(out.records, *r)
	}
	return out, rej, nil
}

// modelPrices reads the price history of the models the candidates name (those with
// tokens or a price; a record with neither needs no model).
func modelPrices(ctx context.Context, tx pgx.Tx, cands []candidate) (map[string][]price, error) {
	var models []string
	for _, c := range cands {
		if c.rec.PromptTokens != 0 || c.rec.CompletionTokens != 0 || c.rec.PriceMicroSEK != 0 {
			models = append(models, c.rec.Model)
		}
	}
	prices := map[string][]price{}
	if len(models) == 0 {
		return prices, nil
	}
	slices.Sort(models)
	models = slices.Compact(models)
	rows, err := tx.Query(ctx, `SELECT model_id, input_ore_per_million, output_ore_per_million, valid_to
		FROM model_prices WHERE model_id = ANY($1)`, models)
	if err != nil {
		return nil, fmt.Errorf("read model prices: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var m string
		var p price
		var to *time.Time
		if err := rows.Scan(&m, &p.in, &p.out, &to); err != nil {
			return nil, fmt.Errorf("read model prices: %w", err)
		}
		if to != nil {
			p.validTo = *to
		}
		prices[m] = append(prices[m], p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read model prices: %w", err)
	}
	return prices, nil
}

// lockAccountBalances locks the balance rows of the candidates' accounts in account order
// and returns the balances of those that exist.
func lockAccountBalances(ctx context.Context, tx pgx.Tx, cands []candidate) (map[string]int64, error) {
	var accts []string
	for _, c := range cands {
		accts = append(accts, c.rec.AccountID)
	}
	slices.Sort(accts)
	accts = slices.Compact(accts)
	balance := map[string]int64{}
	if len(accts) == 0 {
		return balance, nil
	}
	rows, err := tx.Query(ctx, `SELECT account_id, balance_micro_sek FROM lock_balances($1)`, accts)
	if err != nil {
		return nil, fmt.Errorf("lock balances: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var a string
		var b int64
		if err := rows.Scan(&a, &b); err != nil {
			return nil, fmt.Errorf("lock balances: %w", err)
		}
		balance[a] = b
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("lock balances: %w", err)
	}
	return balance, nil
}

func insertRejections(ctx context.Context, tx pgx.Tx, nodeID, batchID string, rs []rejection) error {
	if len(rs) == 0 {
		return nil
	}
	fps, ids, accts, reasons, raws := make([]string, len(rs)), make([]string, len(rs)), make([]string, len(rs)),
		make([]string, len(rs)), make([]string, len(rs))
	for i, r := range rs {
		fps[i], ids[i], accts[i], reasons[i], raws[i] = r.fingerprint(), r.requestID, r.accountID, r.reason, r.storedRaw()
	}
	_, err := tx.Exec(ctx, `INSERT INTO rejected_records (fingerprint, request_id, account_id, node_id, batch_id, reason, raw)
		SELECT r.fp, r.request_id, r.account_id, $6, $7, r.reason, r.raw
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS r(fp, request_id, account_id, reason, raw)
		ORDER BY r.fp
		ON CONFLICT (fingerprint) DO NOTHING`, fps, ids, accts, reasons, raws, cleanText(clip(nodeID)), cleanText(clip(batchID)))
	if err != nil {
		return fmt.Errorf("store rejected records: %w", err)
	}
	return nil
}
