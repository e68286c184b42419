package store_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
	"github.com/sekgate/gateway/controlplane/pgtest"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/usage"
)

// schemaAt returns a fresh database migrated up to version (the schema an older control
// plane left) and a connection to it as the schema owner, for tests of the migrations after
// it on existing data.
func schemaAt(t *testing.T, version int32) (pgtest.Roles, *pgx.Conn) {
	t.Helper()
	db := pgtest.NewRoles(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db.OwnerURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	m, err := migrate.NewMigrator(ctx, conn, "public.schema_version")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadMigrations(store.Migrations()); err != nil {
		t.Fatal(err)
	}
	if err := m.MigrateTo(ctx, version); err != nil {
		t.Fatal(err)
	}
	return db, conn
}

// Migration 016 on records stored before it (routing in the jsonb column): they read back
// as before, and records stored after it keep their routing in routing_json.
func TestMigrationRoutingJSONKeepsExistingRecords(t *testing.T) {
	t.Parallel()
	db, conn := schemaAt(t, 15)
	ctx := context.Background()
	ts := time.Date(2026, 11, 20, 12, 0, 0, 123456000, time.UTC)
	for _, q := range []string{
		`INSERT INTO request_records (request_id, ts, account_id, model, status, result, routing)
			VALUES ('req_old', $1, 'acct_old', 'm', 200, 'ok',
			'{"policy":"se","node_region":"se-sto","attempts":[{"route":"r1","provider":"p","region":"se-sto-1","status":503,"error":"timeout","duration_ms":7},{"route":"r2","provider":"q","region":"se-sto-2","status":200,"duration_ms":5}]}')`,
		`INSERT INTO request_records (request_id, ts, account_id, model, status, result) VALUES ('req_bare', $1, 'acct_old', 'm', 200, 'ok')`,
	} {
		if _, err := conn.Exec(ctx, q, ts); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s, err := store.Open(ctx, store.Config{DatabaseURL: db.RuntimeURL, MigrateDatabaseURL: db.OwnerURL, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	old, err := s.GetRecordForOperator(ctx, "req_old")
	if err != nil {
		t.Fatal(err)
	}
	want := &usage.Routing{Policy: "se", NodeRegion: "se-sto", Attempts: []usage.Attempt{
		{Route: "r1", Provider: "p", Region: "se-sto-1", Status: 503, Error: "timeout", DurationMS: 7},
		{Route: "r2", Provider: "q", Region: "se-sto-2", Status: 200, DurationMS: 5}}}
	if !reflect.DeepEqual(old.Routing, want) || !old.TS.Equal(ts) {
		t.Fatalf("record from before the migration: %+v routing %+v", old, old.Routing)
	}
	if bare, err := s.GetRecordForOperator(ctx, "req_bare"); err != nil || bare.Routing != nil {
		t.Fatalf("record without routing: %+v, %v", bare, err)
	}

	accts := fundedAccounts(t, s, 1)
	rec := record("req_new", accts[0], time.Now().UTC().Truncate(time.Microsecond), 100, 10)
	rec.Routing = want
	if rep, err := s.IngestBatch(ctx, usage.Batch{NodeID: "n", BatchID: "b", Records: []usage.Record{rec}}); err != nil || rep.Inserted != 1 {
		t.Fatalf("ingest: %+v, %v", rep, err)
	}
	got, err := s.GetRecord(ctx, accts[0], "req_new")
	if err != nil || !reflect.DeepEqual(got.Routing, want) {
		t.Fatalf("record stored after the migration: %+v, %v", got.Routing, err)
	}
	var inJSON, inJSONB bool
	if err := conn.QueryRow(ctx, `SELECT routing_json IS NOT NULL, routing IS NOT NULL FROM request_records WHERE request_id = 'req_new'`).Scan(&inJSON, &inJSONB); err != nil || !inJSON || inJSONB {
		t.Fatalf("new record's routing: in routing_json %v, in routing %v (%v)", inJSON, inJSONB, err)
	}
}
