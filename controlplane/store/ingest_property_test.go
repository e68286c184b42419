package store_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/usage"
)

// hostileRecord draws a record the way a broken or hostile node might send it: mostly
// well-formed, sometimes with extreme counts or prices, a price off the formula, an
// unknown model or account, a repeated request ID.
func hostileRecord(rng *rand.Rand, accts []string, ids *[]string, mu *sync.Mutex, now time.Time) usage.Record {
	extremes := []int64{0, 1, -1, math.MaxInt64, math.MinInt64, math.MaxInt64 / 2, store.MaxRecordTokens,
		store.MaxRecordTokens + 1, 1 << 31, 1 << 53}
	pick := func() int64 {
		if rng.IntN(4) == 0 {
			return extremes[rng.IntN(len(extremes))]
		}
		return rng.Int64N(200_000)
	}
	mu.Lock()
	var id string
	if len(*ids) > 0 && rng.IntN(5) == 0 { // a request ID seen before, maybe in another batch
		id = (*ids)[rng.IntN(len(*ids))]
	} else {
		id = testRequestID(rng)
		*ids = append(*ids, id)
	}
	mu.Unlock()
	acct := accts[rng.IntN(len(accts))]
	if rng.IntN(30) == 0 {
		acct = "acct_ffffffffffffffff" // no such account
	}
	r := record(id, acct, now.Add(-time.Duration(rng.IntN(96))*time.Hour), pick(), pick())
	if rng.IntN(8) == 0 {
		r.Model, r.Endpoint, r.CompletionTokens = "nomic-embed", "/v1/embeddings", 0
	}
	in, out := int64(150), int64(300)
	if r.Model == "nomic-embed" {
		in, out = 10, 0
	}
	r.PriceMicroSEK = money.Price(r.PromptTokens, r.CompletionTokens, in, out)
	switch rng.IntN(12) {
	case 0:
		r.PriceMicroSEK = extremes[rng.IntN(len(extremes))]
	case 1:
		r.PriceMicroSEK += int64(rng.IntN(3)) - 1
	case 2:
		r.Model = "no-such-model"
	case 3:
		r.Result = ""
	}
	return r
}

// TestIngestPropertyBalanceIsLedgerSum sends random batches of hostile records from
// concurrent "nodes", each batch delivered more than once, and checks after all of them:
// no ingest failed, every balance equals the sum of its ledger, the debits equal the
// stored records' prices (known accounts), the daily aggregates equal the records and are
// never negative, and every request ID sent is stored or rejected.
func TestIngestPropertyBalanceIsLedgerSum(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	accts := fundedAccounts(t, s, 4)
	// One account with almost no credit: debits take it negative.
	poor, err := s.CreateAccount(ctx, "poor", "any")
	if err != nil {
		t.Fatal(err)
	}
	accts = append(accts, poor.ID)
	now := time.Now().UTC()
	var (
		mu     sync.Mutex
		ids    []string
		wg     sync.WaitGroup
		seed   = uint64(time.Now().UnixNano())
		sent   = map[string]bool{}
		sentMu sync.Mutex
	)
	t.Logf("seed %d", seed)
	const nodes, batches, perBatch = 4, 15, 25
	for n := 0; n < nodes; n++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(n)))
			for bi := 0; bi < batches; bi++ {
				b := usage.Batch{NodeID: fmt.Sprint("node-", n), BatchID: fmt.Sprint(bi)}
				for range 1 + rng.IntN(perBatch) {
					b.Records = append(b.Records, hostileRecord(rng, accts, &ids, &mu, now))
				}
				for try := 0; try < 1+rng.IntN(2); try++ { // a lost reply: the node sends again
					rep, err := s.IngestBatch(ctx, b)
					if err != nil {
						t.Errorf("node %d batch %d: %v", n, bi, err)
						return
					}
					if rep.Inserted+rep.Duplicates+rep.Rejected != len(b.Records) {
						t.Errorf("node %d batch %d: reply %+v does not account for %d records", n, bi, rep, len(b.Records))
					}
				}
				sentMu.Lock()
				for _, r := range b.Records {
					if r.RequestID != "" {
						sent[r.RequestID] = true
					}
				}
				sentMu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	q := func(sql string, args ...any) string {
		t.Helper()
		var v string
		if err := s.Pool().QueryRow(ctx, sql, args...).Scan(&v); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return v
	}
	// balance = Σ ledger, for every account.
	if bad := q(`SELECT count(*)::text FROM account_balances b WHERE b.balance_micro_sek::numeric <>
		COALESCE((SELECT sum(amount_micro_sek) FROM ledger l WHERE l.account_id = b.account_id), 0)`); bad != "0" {
		t.Fatalf("%s accounts with balance ≠ Σ ledger", bad)
	}
	// Debits are exactly the stored records' prices of known accounts.
	debits := q(`SELECT COALESCE(-sum(amount_micro_sek), 0)::text FROM ledger WHERE kind = 'debit'`)
	recs := q(`SELECT COALESCE(sum(price_micro_sek), 0)::text FROM request_records r
		WHERE EXISTS (SELECT 1 FROM accounts a WHERE a.id = r.account_id)`)
	if debits != recs {
		t.Fatalf("ledger debits %s, records of known accounts %s", debits, recs)
	}
	// The daily aggregates equal the records, and nothing is negative or out of bounds.
	for _, col := range []string{"prompt_tokens", "completion_tokens", "price_micro_sek"} {
		agg := q(`SELECT COALESCE(sum(` + col + `), 0)::text FROM usage_daily`)
		rs := q(`SELECT COALESCE(sum(` + col + `), 0)::text FROM request_records`)
		if agg != rs {
			t.Fatalf("usage_daily %s %s, records %s", col, agg, rs)
		}
	}
	if neg := q(`SELECT count(*)::text FROM usage_daily WHERE requests < 0 OR prompt_tokens < 0 OR completion_tokens < 0 OR price_micro_sek < 0`); neg != "0" {
		t.Fatalf("%s negative daily aggregates", neg)
	}
	if bad := q(`SELECT count(*)::text FROM request_records WHERE prompt_tokens NOT BETWEEN 0 AND $1
		OR completion_tokens NOT BETWEEN 0 AND $1 OR price_micro_sek NOT BETWEEN 0 AND $2`, store.MaxRecordTokens, store.MaxRecordPriceMicroSEK); bad != "0" {
		t.Fatalf("%s stored records out of bounds", bad)
	}
	for _, a := range accts {
		u, err := s.UsageSince(ctx, a, now.AddDate(0, 0, -30))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range u {
			if m.Requests < 0 || m.PromptTokens < 0 || m.CompletionTokens < 0 || m.PriceMicroSEK < 0 {
				t.Fatalf("usage_30d of %s negative: %+v", a, m)
			}
		}
	}
	// Every request ID sent is stored or rejected; both happened.
	missing := 0
	for id := range sent {
		if q(`SELECT (EXISTS (SELECT 1 FROM request_records WHERE request_id = $1) OR
			EXISTS (SELECT 1 FROM rejected_records WHERE request_id = $1))::text`, id) != "true" {
			missing++
		}
	}
	stored, rejected := q(`SELECT count(*)::text FROM request_records`), q(`SELECT count(*)::text FROM rejected_records`)
	if missing != 0 || stored == "0" || rejected == "0" {
		t.Fatalf("%d request IDs neither stored nor rejected (%s stored, %s rejected)", missing, stored, rejected)
	}
	t.Logf("%d IDs: %s stored, %s rejections; debits %s µSEK", len(sent), stored, rejected, debits)
}

// A price change racing a node's older snapshot: the record is accepted at the previous
// price within PriceGrace of the change, at the current price always, and refused at a
// price the model never had.
func TestIngestPriceChangeRace(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	accts := fundedAccounts(t, s, 1)
	c := testCatalog()
	c.Models[0].InputOrePerMillion, c.Models[0].OutputOrePerMillion = 200, 400
	if _, _, err := s.UpsertCatalog(ctx, c); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	old := record("old-price", accts[0], now, 1000, 1000) // 150/300
	cur := record("new-price", accts[0], now, 1000, 1000)
	cur.PriceMicroSEK = money.Price(1000, 1000, 200, 400)
	never := record("never", accts[0], now, 1000, 1000)
	never.PriceMicroSEK = money.Price(1000, 1000, 175, 350)
	rep, err := s.IngestBatch(ctx, usage.Batch{Records: []usage.Record{old, cur, never}})
	if err != nil || rep.Inserted != 2 || rep.Rejected != 1 {
		t.Fatalf("reply %+v %v", rep, err)
	}
	// Once the change is older than the grace, the old price is refused: move the change
	// back in time rather than the record forward (the record's time may not run ahead).
	if _, err := s.Pool().Exec(ctx, `UPDATE model_prices SET valid_to = valid_to - $1::interval WHERE valid_to IS NOT NULL`,
		fmt.Sprintf("%d seconds", int((store.PriceGrace+time.Hour).Seconds()))); err != nil {
		t.Fatal(err)
	}
	late := record("late", accts[0], now, 1000, 1000)
	if rep, err := s.IngestBatch(ctx, usage.Batch{Records: []usage.Record{late}}); err != nil || rep.Rejected != 1 {
		t.Fatalf("stale price after the grace: %+v %v", rep, err)
	}
}
