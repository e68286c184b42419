package store_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/pgtest"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/controlplane/store/storetest"
	"github.com/sekgate/gateway/internal/syncbuf"
	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

// checkDebitsAreDistinctRecords checks, per account, that the ledger's debits are the sum
// of the prices of the distinct records sent for it (want), that the stored records and
// the daily aggregates say the same, and that the balance is its ledger's sum.
func checkDebitsAreDistinctRecords(t *testing.T, s *store.Store, want map[string]int64) {
	t.Helper()
	ctx := context.Background()
	for acct, price := range want {
		var debits, records, daily int64
		var gap string
		if err := s.Pool().QueryRow(ctx, `SELECT
				COALESCE((SELECT -sum(amount_micro_sek) FROM ledger WHERE account_id = $1 AND kind = 'debit'), 0)::bigint,
				COALESCE((SELECT sum(price_micro_sek) FROM request_records WHERE account_id = $1), 0)::bigint,
				COALESCE((SELECT sum(price_micro_sek) FROM usage_daily WHERE account_id = $1), 0)::bigint,
				(SELECT (b.balance_micro_sek - COALESCE((SELECT sum(amount_micro_sek) FROM ledger l WHERE l.account_id = $1), 0))::text
					FROM account_balances b WHERE b.account_id = $1)`, acct).Scan(&debits, &records, &daily, &gap); err != nil {
			t.Fatal(err)
		}
		if debits != price || records != price || daily != price || gap != "0" {
			t.Fatalf("%s: debits %d, records %d, daily aggregates %d, distinct records' prices %d; balance − Σ ledger %s",
				acct, debits, records, daily, price, gap)
		}
	}
}

// For any sequence of batches with repeats (a batch sent again whole, records of earlier
// batches sent again in new batches, batches delivered concurrently), the ledger's debits
// equal the sum of the distinct records' prices, per account.
func TestIngestPropertyDebitsAreDistinctRecords(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	accts := fundedAccounts(t, s, 3)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	want := map[string]int64{}
	var sent []usage.Record
	var batches []usage.Batch
	for b := 0; b < 40; b++ {
		batch := usage.Batch{NodeID: fmt.Sprint("node-", rng.IntN(3)), BatchID: fmt.Sprint("b", b)}
		for range 1 + rng.IntN(30) {
			if len(sent) > 0 && rng.IntN(4) == 0 { // a record sent before, in another batch
				batch.Records = append(batch.Records, sent[rng.IntN(len(sent))])
				continue
			}
			r := record(testRequestID(rng), accts[rng.IntN(len(accts))],
				time.Now().Add(-time.Duration(rng.IntN(72))*time.Hour), rng.Int64N(100_000), rng.Int64N(10_000))
			sent = append(sent, r)
			want[r.AccountID] += r.PriceMicroSEK
			batch.Records = append(batch.Records, r)
		}
		batches = append(batches, batch)
		if len(batches) > 1 && rng.IntN(3) == 0 { // an earlier batch sent again whole
			batches = append(batches, batches[rng.IntN(len(batches)-1)])
		}
	}
	// Deliver the sequence in order, each batch sometimes twice at once.
	for i, b := range batches {
		copies := 1 + rng.IntN(2)
		var wg sync.WaitGroup
		for range copies {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rep, err := s.IngestBatch(ctx, b)
				if err != nil {
					t.Errorf("batch %d: %v", i, err)
					return
				}
				if rep.Rejected != 0 || rep.Inserted+rep.Duplicates != len(b.Records) {
					t.Errorf("batch %d: reply %+v for %d records", i, rep, len(b.Records))
				}
			}()
		}
		wg.Wait()
	}
	if t.Failed() {
		return
	}
	checkDebitsAreDistinctRecords(t, s, want)
}

// openReplicas opens two stores on one new database, each with its own pool of maxConns
// and its own log (warnings and above), both migrating at start: two control planes.
func openReplicas(t *testing.T, maxConns int32) ([2]*store.Store, *[2]syncbuf.Buffer) {
	t.Helper()
	db := pgtest.NewRoles(t)
	logs := new([2]syncbuf.Buffer)
	var replicas [2]*store.Store
	for i := range replicas {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		s, err := store.Open(ctx, store.Config{DatabaseURL: db.RuntimeURL, MigrateDatabaseURL: db.OwnerURL, MaxConns: maxConns,
			Logger: slog.New(slog.NewTextHandler(&logs[i], &slog.HandlerOptions{Level: slog.LevelWarn}))})
		cancel()
		if err != nil {
			t.Fatalf("control plane %d: %v", i, err)
		}
		t.Cleanup(s.Close)
		replicas[i] = s
	}
	return replicas, logs
}

// Two control planes on one Postgres (two stores, each with its own pool, both migrating
// at start) ingest concurrently, the same batches and different ones: every record is
// charged once, and no transaction had to be retried for a deadlock.
func TestTwoControlPlanesIngestConcurrently(t *testing.T) {
	t.Parallel()
	replicas, logs := openReplicas(t, 8)
	ctx := context.Background()
	accts := fundedAccounts(t, replicas[0], 6)
	want := map[string]int64{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	const nodes, rounds = 4, 12
	for n := 0; n < nodes; n++ {
		rng := rand.New(rand.NewPCG(uint64(n), 7))
		for r := 0; r < rounds; r++ {
			b := usage.Batch{NodeID: fmt.Sprint("node-", n), BatchID: fmt.Sprint(r)}
			for i := 0; i < 40; i++ {
				// Every batch spans several accounts, so the replicas' balance locks overlap.
				rec := record(fmt.Sprintf("n%d-r%d-%d", n, r, i), accts[rng.IntN(len(accts))], time.Now(), 1000+rng.Int64N(5000), rng.Int64N(500))
				want[rec.AccountID] += rec.PriceMicroSEK
				b.Records = append(b.Records, rec)
			}
			// Odd nodes deliver each batch to both control planes at once (a retry that
			// reached the other replica); even nodes alternate between them.
			targets := []*store.Store{replicas[r%2]}
			if n%2 == 1 {
				targets = replicas[:]
			}
			for _, s := range targets {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rep, err := s.IngestBatch(ctx, b)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						t.Errorf("node %d batch %d: %v", n, r, err)
					} else if rep.Inserted+rep.Duplicates != len(b.Records) {
						t.Errorf("node %d batch %d: reply %+v", n, r, rep)
					}
				}()
			}
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	checkDebitsAreDistinctRecords(t, replicas[1], want)
	for i := range logs {
		if l := logs[i].String(); strings.Contains(l, "transaction retried") {
			t.Errorf("control plane %d retried transactions (deadlock or serialization failure):\n%s", i, l)
		}
	}
	bal, err := replicas[1].Balance(ctx, accts[0])
	if err != nil || bal != 1000*money.MicroPerSEK-want[accts[0]] {
		t.Fatalf("balance of %s: %d (%v), want %d", accts[0], bal, err, 1000*money.MicroPerSEK-want[accts[0]])
	}
}

// With per-batch debits, a record is charged only when it is first stored, so a copy sent
// after retention deleted the stored one would be charged again: the ingest refuses
// records older than the retention (less a margin), and a replay after retention is
// rejected, not charged.
func TestIngestRefusesRecordsRetentionMayHaveDeleted(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	ctx := context.Background()
	const retention = 30 * 24 * time.Hour
	s, _ := storetest.Open(t, store.Config{Logger: quietLogger(), Now: clock, RecordRetention: retention})
	accts := fundedAccounts(t, s, 1)
	kept := record("kept", accts[0], now.Add(-29*24*time.Hour), 1000, 1000)
	old := record("old", accts[0], now.Add(-retention), 1000, 1000)
	rep, err := s.IngestBatch(ctx, usage.Batch{Records: []usage.Record{kept, old}})
	if err != nil || rep.Inserted != 1 || rep.Rejected != 1 {
		t.Fatalf("reply %+v %v, want kept inserted and old rejected", rep, err)
	}
	bal, _ := s.Balance(ctx, accts[0])
	// Two days on, retention deletes "kept"; its copy comes again.
	mu.Lock()
	now = now.Add(48 * time.Hour)
	mu.Unlock()
	if n, err := s.DeleteRecordsBefore(ctx, clock().Add(-retention), 100); err != nil || n != 1 {
		t.Fatalf("retention deleted %d (%v), want 1", n, err)
	}
	rep, err = s.IngestBatch(ctx, usage.Batch{Records: []usage.Record{kept}})
	if err != nil || rep.Inserted != 0 || rep.Rejected != 1 {
		t.Fatalf("replay after retention: %+v %v, want rejected", rep, err)
	}
	if after, _ := s.Balance(ctx, accts[0]); after != bal {
		t.Fatalf("balance %d after the replay, was %d: charged twice", after, bal)
	}
}

// Two control planes compile snapshots at once after every change (both hear the same
// notification): they agree on one version per change, and neither has to retry its
// compile for a serialization failure (the compile that waits for the other's lock reads
// what the other committed).
func TestTwoControlPlanesCompileSnapshotsConcurrently(t *testing.T) {
	t.Parallel()
	replicas, logs := openReplicas(t, 4)
	ctx := context.Background()
	fundedAccounts(t, replicas[0], 1)
	first, err := replicas[0].CompileSnapshot(ctx, snapshot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	const changes = 20
	for c := 1; c <= changes; c++ {
		if _, err := replicas[c%2].CreateAccount(ctx, fmt.Sprint("customer ", c), "any"); err != nil {
			t.Fatal(err)
		}
		var got [2]int64
		var wg sync.WaitGroup
		for i, s := range replicas {
			wg.Go(func() {
				snap, err := s.CompileSnapshot(ctx, snapshot.Limits{})
				if err != nil {
					t.Errorf("change %d, control plane %d: %v", c, i, err)
					return
				}
				got[i] = snap.Version
			})
		}
		wg.Wait()
		if want := first.Version + int64(c); got[0] != want || got[1] != want {
			t.Fatalf("change %d: versions %v, want both %d", c, got, want)
		}
	}
	for i := range logs {
		if l := logs[i].String(); strings.Contains(l, "transaction retried") {
			t.Errorf("control plane %d retried snapshot compiles:\n%s", i, l)
		}
	}
}
