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

// fundedAccounts creates n accounts with 1000 SEK each.
func fundedAccounts(t *testing.T, s *store.Store, n int) []string {
	t.Helper()
	ctx := context.Background()
	// The catalogue prices the records are checked against (llama-3.1-8b 150/300 öre per
	// million tokens, nomic-embed 10/0).
	if _, _, err := s.UpsertCatalog(ctx, testCatalog()); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n)
	for i := range ids {
		a, err := s.CreateAccount(ctx, fmt.Sprintf("customer %d", i), "any")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddCredit(ctx, store.Credit{AccountID: a.ID, AmountMicroSEK: 1000 * money.MicroPerSEK, Kind: store.KindCredit}); err != nil {
			t.Fatal(err)
		}
		ids[i] = a.ID
	}
	return ids
}

func record(id, account string, ts time.Time, prompt, completion int64) usage.Record {
	return usage.Record{
		RequestID: id, TS: ts, AccountID: account, Model: "llama-3.1-8b", Endpoint: "/v1/chat/completions",
		Provider: "vllm", Residency: "se-sto-1", Status: 200, Result: usage.ResultOK,
		PromptTokens: prompt, CompletionTokens: completion, PriceMicroSEK: money.Price(prompt, completion, 150, 300),
		Routing: &usage.Routing{Policy: "se", Attempts: []usage.Attempt{{Route: "r1", Provider: "vllm", Region: "se-sto-1", Status: 200}}},
	}
}

func TestBatchCountsOnce(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	accts := fundedAccounts(t, s, 2)
	now := time.Now().UTC()
	b := usage.Batch{NodeID: "node-a", BatchID: "b1"}
	var want [2]int64
	for i := 0; i < 20; i++ {
		r := record(fmt.Sprintf("req_%03d", i), accts[i%2], now.Add(-time.Duration(i)*time.Minute), int64(100+i), int64(10*i))
		want[i%2] += r.PriceMicroSEK
		b.Records = append(b.Records, r)
	}
	first, err := s.IngestBatch(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if first.Inserted != 20 || first.Duplicates != 0 || len(first.Balances) != 2 || first.BatchID != "b1" {
		t.Fatalf("first reply %+v", first)
	}
	// The same batch, 1000 times in all, from two "nodes" at once.
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for n := 0; n < 2; n++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				rep, err := s.IngestBatch(ctx, b)
				if err != nil {
					errs <- err
					return
				}
				if rep.Inserted != 0 || rep.Duplicates != 20 {
					errs <- fmt.Errorf("repeat %d: %+v", i, rep)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, a := range accts {
		bal, _ := s.Balance(ctx, a)
		sum, _ := s.LedgerSum(ctx, a)
		if bal != 1000*money.MicroPerSEK-want[i] || sum != bal {
			t.Errorf("account %d: balance %d ledger %d, want %d", i, bal, sum, 1000*money.MicroPerSEK-want[i])
		}
	}
	var n int
	s.Pool().QueryRow(ctx, `SELECT count(*) FROM request_records`).Scan(&n)
	if n != 20 {
		t.Fatalf("%d records, want 20", n)
	}
	var reqs int64
	s.Pool().QueryRow(ctx, `SELECT COALESCE(sum(requests), 0)::bigint FROM usage_daily`).Scan(&reqs)
	if reqs != 20 {
		t.Fatalf("usage_daily counts %d requests, want 20", reqs)
	}
}

// A batch some of whose records were stored before (its plain insert fails, and it is
// applied again skipping them) stores and charges only the new ones, and the stored ones
// keep the node that delivered them first.
func TestBatchWithSomeStoredRecords(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	accts := fundedAccounts(t, s, 1)
	now := time.Now().UTC()
	recs := make([]usage.Record, 15)
	for i := range recs {
		recs[i] = record(fmt.Sprintf("req_part_%02d", i), accts[0], now.Add(-time.Duration(i)*time.Second), int64(100+i), 50)
	}
	first, err := s.IngestBatch(ctx, usage.Batch{NodeID: "node-a", BatchID: "b1", Records: recs[:10]})
	if err != nil || first.Inserted != 10 {
		t.Fatalf("first batch: %+v, %v", first, err)
	}
	// Stored records first, among and last in the second batch's request ID order.
	for _, second := range [][]usage.Record{recs[5:12], {recs[12], recs[0], recs[13]}, {recs[14], recs[9]}} {
		rep, err := s.IngestBatch(ctx, usage.Batch{NodeID: "node-b", BatchID: "b2", Records: second})
		if err != nil {
			t.Fatal(err)
		}
		stored := 0
		for _, r := range second {
			if r.RequestID <= recs[9].RequestID {
				stored++
			}
		}
		if rep.Inserted != len(second)-stored || rep.Duplicates != stored || rep.Rejected != 0 {
			t.Fatalf("batch %v: reply %+v, want %d inserted and %d duplicates", second, rep, len(second)-stored, stored)
		}
	}
	var want int64
	for _, r := range recs {
		want += r.PriceMicroSEK
	}
	bal, _ := s.Balance(ctx, accts[0])
	sum, _ := s.LedgerSum(ctx, accts[0])
	if bal != 1000*money.MicroPerSEK-want || sum != bal {
		t.Fatalf("balance %d, ledger %d, want %d", bal, sum, 1000*money.MicroPerSEK-want)
	}
	var n, fromA int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE node_id = 'node-a') FROM request_records`).Scan(&n, &fromA); err != nil {
		t.Fatal(err)
	}
	if n != 15 || fromA != 10 {
		t.Fatalf("%d records, %d of them from node-a; want 15 and 10", n, fromA)
	}
}

func TestConcurrentFirstDelivery(t *testing.T) {
	t.Parallel()
	// Two nodes deliver the same fresh batch at the same moment: one wins, nothing doubles.
	s := newStore(t)
	ctx := context.Background()
	accts := fundedAccounts(t, s, 1)
	for round := 0; round < 20; round++ {
		b := usage.Batch{BatchID: fmt.Sprint(round)}
		for i := 0; i < 5; i++ {
			b.Records = append(b.Records, record(fmt.Sprintf("r%d_%d", round, i), accts[0], time.Now(), 1000, 1000))
		}
		var wg sync.WaitGroup
		replies := make([]usage.Reply, 2)
		for n := range replies {
			wg.Add(1)
			go func() {
				defer wg.Done()
				bb := b
				bb.NodeID = fmt.Sprint("node-", n)
				var err error
				if replies[n], err = s.IngestBatch(ctx, bb); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if replies[0].Inserted+replies[1].Inserted != 5 {
			t.Fatalf("round %d: inserted %d + %d, want 5 in all", round, replies[0].Inserted, replies[1].Inserted)
		}
	}
	bal, _ := s.Balance(ctx, accts[0])
	want := 1000*money.MicroPerSEK - 100*money.Price(1000, 1000, 150, 300)
	if bal != want {
		t.Fatalf("balance %d, want %d", bal, want)
	}
}

func TestMixedLoadLedgerMatchesRecords(t *testing.T) {
	t.Parallel()
	// Overlapping batches over shared accounts, in random orders, with repeats: no deadlock,
	// and the ledger's debits equal the records' prices to the micro-SEK.
	s := newStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	accts := fundedAccounts(t, s, 5)
	const workers, batches, perBatch = 4, 25, 20
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for bi := 0; bi < batches; bi++ {
				b := usage.Batch{NodeID: fmt.Sprint("node-", w), BatchID: fmt.Sprint(bi)}
				for i := 0; i < perBatch; i++ {
					// IDs overlap between workers (same space), so batches collide.
					id := fmt.Sprintf("req_t%04d", rng.IntN(1500))
					r := record(id, accts[hashIndex(id, len(accts))], time.Now().Add(-time.Duration(rng.IntN(72))*time.Hour), int64(rng.IntN(5000)), int64(rng.IntN(2000)))
					r.PriceMicroSEK = money.Price(r.PromptTokens, r.CompletionTokens, 150, 300) // same ID, same price
					if rng.IntN(10) == 0 {
						r.Model, r.Endpoint, r.CompletionTokens = "nomic-embed", "/v1/embeddings", 0
						r.PriceMicroSEK = money.Price(r.PromptTokens, 0, 10, 0)
					}
					b.Records = append(b.Records, r)
				}
				rng.Shuffle(len(b.Records), func(i, j int) { b.Records[i], b.Records[j] = b.Records[j], b.Records[i] })
				if _, err := s.IngestBatch(ctx, b); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	var recordSum, ledgerDebits, dailySum int64
	s.Pool().QueryRow(ctx, `SELECT COALESCE(sum(price_micro_sek),0)::bigint FROM request_records`).Scan(&recordSum)
	s.Pool().QueryRow(ctx, `SELECT COALESCE(-sum(amount_micro_sek),0)::bigint FROM ledger WHERE kind = 'debit'`).Scan(&ledgerDebits)
	s.Pool().QueryRow(ctx, `SELECT COALESCE(sum(price_micro_sek),0)::bigint FROM usage_daily`).Scan(&dailySum)
	if recordSum == 0 || recordSum != ledgerDebits || recordSum != dailySum {
		t.Fatalf("records %d, ledger debits %d, daily aggregates %d", recordSum, ledgerDebits, dailySum)
	}
	for _, a := range accts {
		bal, _ := s.Balance(ctx, a)
		sum, _ := s.LedgerSum(ctx, a)
		var recs int64
		s.Pool().QueryRow(ctx, `SELECT COALESCE(sum(price_micro_sek),0)::bigint FROM request_records WHERE account_id = $1`, a).Scan(&recs)
		if bal != sum || sum != 1000*money.MicroPerSEK-recs {
			t.Errorf("%s: balance %d, ledger sum %d, credit minus records %d", a, bal, sum, 1000*money.MicroPerSEK-recs)
		}
	}
}

func hashIndex(s string, n int) int {
	h := 0
	for _, c := range s {
		h = h*31 + int(c)
	}
	if h < 0 {
		h = -h
	}
	return h % n
}

func TestBatchValidationAndEdgeCases(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	accts := fundedAccounts(t, s, 1)
	now := time.Now()
	for _, tc := range []struct {
		name string
		rec  usage.Record
	}{
		{"no request id", usage.Record{TS: now, AccountID: accts[0], Result: "ok"}},
		{"no account", usage.Record{RequestID: "x", TS: now, Result: "ok"}},
		{"no ts", usage.Record{RequestID: "x", AccountID: accts[0], Result: "ok"}},
		{"ts far ahead", usage.Record{RequestID: "x", TS: now.Add(48 * time.Hour), AccountID: accts[0], Result: "ok"}},
		{"no result", usage.Record{RequestID: "x", TS: now, AccountID: accts[0]}},
		{"NUL in model", usage.Record{RequestID: "x", TS: now, AccountID: accts[0], Result: "ok", Model: "a\x00b"}},
		{"status beyond int32", usage.Record{RequestID: "x", TS: now, AccountID: accts[0], Result: "ok", Status: 1 << 33}},
		{"negative price", usage.Record{RequestID: "x", TS: now, AccountID: accts[0], Result: "ok", PriceMicroSEK: -1}},
		{"negative tokens", record("x", accts[0], now, -5, 10)},
		{"int64 max tokens", record("x", accts[0], now, 1, math.MaxInt64)},
		{"price beyond bound", func() usage.Record {
			r := record("x", accts[0], now, 1, 1)
			r.PriceMicroSEK = store.MaxRecordPriceMicroSEK + 1
			return r
		}()},
		{"price not the formula", func() usage.Record { r := record("x", accts[0], now, 100, 100); r.PriceMicroSEK++; return r }()},
		{"unknown model", func() usage.Record { r := record("x", accts[0], now, 100, 100); r.Model = "nope"; return r }()},
	} {
		rep, err := s.IngestBatch(ctx, usage.Batch{Records: []usage.Record{tc.rec}})
		if err != nil || rep.Inserted != 0 || rep.Rejected != 1 {
			t.Errorf("%s: reply %+v, err %v; want rejected", tc.name, rep, err)
		}
	}
	if bal, _ := s.Balance(ctx, accts[0]); bal != 1000*money.MicroPerSEK {
		t.Fatalf("rejected records charged: balance %d", bal)
	}
	// Repeats inside one batch count once; zero-price records are stored without a debit;
	// an unknown account's record is stored, not charged.
	r := record("dup", accts[0], now, 100, 100)
	free := record("free", accts[0], now, 0, 0)
	ghost := record("ghost", "acct_ffffffffffffffff", now, 100, 100)
	rep, err := s.IngestBatch(ctx, usage.Batch{Records: []usage.Record{r, r, free, ghost}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Inserted != 3 || rep.Duplicates != 1 || len(rep.Balances) != 1 {
		t.Fatalf("reply %+v", rep)
	}
	if rep.Balances[0].MicroSEK != 1000*money.MicroPerSEK-r.PriceMicroSEK {
		t.Fatalf("balance %d", rep.Balances[0].MicroSEK)
	}
	// An empty batch is fine and reports the clock.
	rep2, err := s.IngestBatch(ctx, usage.Batch{BatchID: "empty"})
	if err != nil || rep2.Inserted != 0 || rep2.BalanceSeq != rep.BalanceSeq {
		t.Fatalf("empty batch: %+v %v", rep2, err)
	}
	// Reply seq makes BalancesSince consistent.
	seq, bals, _ := s.BalancesSince(ctx, rep.BalanceSeq-1)
	if seq != rep.BalanceSeq || len(bals) != 1 {
		t.Fatalf("balances since: %d %+v", seq, bals)
	}
	got, err := s.GetRecord(ctx, accts[0], "dup")
	if err != nil || got.Routing == nil || got.Routing.Attempts[0].Route != "r1" || got.PromptTokens != 100 {
		t.Fatalf("stored record: %+v %v", got, err)
	}
}

func TestRecordsAndRetention(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	accts := fundedAccounts(t, s, 2)
	base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	key := "key_0123456789ab"
	var b usage.Batch
	for i := 0; i < 30; i++ {
		r := record(fmt.Sprintf("r%02d", i), accts[0], base.Add(-time.Duration(i)*time.Hour), 10, 10)
		if i%3 == 0 {
			r.KeyID = &key
		}
		b.Records = append(b.Records, r)
	}
	b.Records = append(b.Records, record("other", accts[1], base, 10, 10))
	if _, err := s.IngestBatch(ctx, b); err != nil {
		t.Fatal(err)
	}
	// Pages of 7, newest first, cover everything exactly once.
	var all []string
	q := store.RecordQuery{AccountID: accts[0], Limit: 7}
	for {
		page, err := s.ListRecords(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page {
			all = append(all, r.RequestID)
		}
		if len(page) < q.Limit {
			break
		}
		last := page[len(page)-1]
		q.After = &store.RecordPos{TS: last.TS, RequestID: last.RequestID}
	}
	if len(all) != 30 || all[0] != "r00" || all[29] != "r29" {
		t.Fatalf("pages: %v", all)
	}
	byKey, _ := s.ListRecords(ctx, store.RecordQuery{AccountID: accts[0], KeyID: key, Limit: 100})
	if len(byKey) != 10 {
		t.Fatalf("by key: %d", len(byKey))
	}
	if other, _ := s.ListRecords(ctx, store.RecordQuery{AccountID: accts[1], KeyID: key, Limit: 100}); len(other) != 0 {
		t.Fatalf("another account's key leaked %d records", len(other))
	}
	u, err := s.UsageSince(ctx, accts[0], base.AddDate(0, 0, -30))
	if err != nil || len(u) != 1 || u[0].Requests != 30 || u[0].PromptTokens != 300 {
		t.Fatalf("usage: %+v %v", u, err)
	}
	// Retention: delete records older than 10 hours in batches of 4.
	cutoff := base.Add(-10*time.Hour + time.Minute)
	total := 0
	for {
		n, err := s.DeleteRecordsBefore(ctx, cutoff, 4)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if n > 4 {
			t.Fatalf("batch deleted %d", n)
		}
		total += n
	}
	if total != 20 {
		t.Fatalf("retention deleted %d, want 20", total)
	}
	// Ledger and aggregates survive retention.
	if u2, _ := s.UsageSince(ctx, accts[0], base.AddDate(0, 0, -30)); u2[0].Requests != 30 {
		t.Fatalf("aggregates lost: %+v", u2)
	}
}
