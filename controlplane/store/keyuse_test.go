package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/usage"
)

// A key's last use follows the newest record the ingest stored for it: an older record
// later does not move it back, a resent batch changes nothing, and a key that is not in
// api_keys is not kept. A listing of the key's records (through its account's index) finds
// them newest first.
func TestKeyLastUseFollowsIngest(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	accts := fundedAccounts(t, s, 2)
	key, _, err := s.CreateKey(ctx, accts[0], "k", nil)
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := s.CreateKey(ctx, accts[0], "other", nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	rec := func(id string, k string, ago time.Duration) usage.Record {
		r := record(id, accts[0], now.Add(-ago), 100, 10)
		r.KeyID = &k
		return r
	}
	ingest := func(batch string, recs ...usage.Record) {
		t.Helper()
		if _, err := s.IngestBatch(ctx, usage.Batch{NodeID: "n", BatchID: batch, Records: recs}); err != nil {
			t.Fatal(err)
		}
	}
	lastUse := func(step string, want map[string]time.Time) {
		t.Helper()
		got, err := s.KeysLastUse(ctx, accts[0])
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: last use %v, want %v", step, got, want)
		}
		for k, w := range want {
			if !got[k].Equal(w) {
				t.Fatalf("%s: last use of %s %v, want %v", step, k, got[k], w)
			}
		}
	}
	lastUse("before any record", map[string]time.Time{})
	b1 := []usage.Record{rec("req_a1", key.ID, 3*time.Minute), rec("req_a2", key.ID, time.Minute),
		rec("req_a3", key.ID, 2*time.Minute), rec("req_a4", other.ID, 5*time.Minute),
		rec("req_a5", "key_ffffffffffff", 0)}
	ingest("b1", b1...)
	lastUse("first batch", map[string]time.Time{key.ID: now.Add(-time.Minute), other.ID: now.Add(-5 * time.Minute)})
	ingest("b2", rec("req_b1", key.ID, 10*time.Minute), rec("req_b2", other.ID, 4*time.Minute))
	lastUse("older record of key, newer of other", map[string]time.Time{key.ID: now.Add(-time.Minute), other.ID: now.Add(-4 * time.Minute)})
	ingest("b1", b1...)
	lastUse("first batch again", map[string]time.Time{key.ID: now.Add(-time.Minute), other.ID: now.Add(-4 * time.Minute)})
	var unknown int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM key_last_use WHERE key_id = 'key_ffffffffffff'`).Scan(&unknown); err != nil || unknown != 0 {
		t.Fatalf("unknown key kept: %d rows (%v)", unknown, err)
	}

	page, err := s.ListRecords(ctx, store.RecordQuery{AccountID: accts[0], KeyID: key.ID, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range page {
		ids = append(ids, r.RequestID)
	}
	if fmt.Sprint(ids) != "[req_a2 req_a3 req_a1 req_b1]" {
		t.Fatalf("records of the key: %v", ids)
	}
	op, err := s.ListRecordsForOperator(ctx, store.OperatorRecordQuery{KeyID: other.ID, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(op) != 2 || op[0].RequestID != "req_b2" || op[1].RequestID != "req_a4" {
		t.Fatalf("operator's records of the other key: %+v", op)
	}
}

// Migration 015 on a database with records from the schema before it: every key's last use
// is the time of its newest record, the per-key index is gone, and the ingest goes on.
func TestMigrationKeyLastUseKeepsExistingRecords(t *testing.T) {
	t.Parallel()
	db, conn := schemaAt(t, 14)
	ctx := context.Background()
	old, err := store.Open(ctx, store.Config{DatabaseURL: db.RuntimeURL, SkipMigrations: true, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	// This build's account reads name columns added after migration 14; InsertAccount
	// writes only columns the old schema has.
	var acct struct{ ID string }
	err = old.InTx(ctx, func(tx pgx.Tx) (err error) {
		acct.ID, err = store.InsertAccount(ctx, tx, "before", "any", time.Now())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, name := range []string{"used", "used too", "never used"} {
		k, _, err := old.CreateKey(ctx, acct.ID, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.ID)
	}
	old.Close()
	base := time.Date(2026, 11, 20, 12, 0, 0, 123456000, time.UTC)
	for i := range 30 {
		if _, err := conn.Exec(ctx, `INSERT INTO request_records (request_id, ts, account_id, key_id, model, status, result)
			VALUES ($1, $2, $3, $4, 'm', 200, 'ok')`, fmt.Sprintf("req_%02d", i), base.Add(time.Duration(i)*time.Minute), acct.ID, keys[i%2]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, `INSERT INTO request_records (request_id, ts, account_id, key_id, model, status, result)
		VALUES ('req_box', $1, $2, NULL, 'm', 200, 'ok')`, base.Add(time.Hour), acct.ID); err != nil {
		t.Fatal(err)
	}

	s, err := store.Open(ctx, store.Config{DatabaseURL: db.RuntimeURL, MigrateDatabaseURL: db.OwnerURL, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.KeysLastUse(ctx, acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Time{keys[0]: base.Add(28 * time.Minute), keys[1]: base.Add(29 * time.Minute)}
	if len(got) != 2 || !got[keys[0]].Equal(want[keys[0]]) || !got[keys[1]].Equal(want[keys[1]]) {
		t.Fatalf("last use after migration %v, want %v", got, want)
	}
	var idx int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE indexname = 'request_records_key_ts'`).Scan(&idx); err != nil || idx != 0 {
		t.Fatalf("per-key index still there (%d, %v)", idx, err)
	}
	page, err := s.ListRecords(ctx, store.RecordQuery{AccountID: acct.ID, KeyID: keys[1], Limit: 3})
	if err != nil || len(page) != 3 || page[0].RequestID != "req_29" || page[2].RequestID != "req_25" {
		t.Fatalf("records of a key after migration: %+v, %v", page, err)
	}
	fresh := record("req_new", acct.ID, time.Now().UTC().Truncate(time.Microsecond), 0, 0)
	fresh.KeyID = &keys[2]
	if rep, err := s.IngestBatch(ctx, usage.Batch{NodeID: "n", BatchID: "after", Records: []usage.Record{fresh}}); err != nil || rep.Inserted != 1 {
		t.Fatalf("ingest after migration: %+v, %v", rep, err)
	}
	if got, err := s.KeysLastUse(ctx, acct.ID); err != nil || !got[keys[2]].Equal(fresh.TS) {
		t.Fatalf("last use after an ingest: %v, %v", got, err)
	}
}
