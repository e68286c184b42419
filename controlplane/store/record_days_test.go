package store_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oklog/ulid/v2"
	"github.com/sekgate/gateway/controlplane/pgtest"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/controlplane/store/storetest"
	"github.com/sekgate/gateway/shared/usage"
)

// nodeRequestID returns a request ID as a node makes them: "req_" and a ULID of t.
func nodeRequestID(t time.Time, rng *rand.Rand) string {
	var id ulid.ULID
	_ = id.SetTime(ulid.Timestamp(t))
	binary.LittleEndian.PutUint64(id[6:14], rng.Uint64())
	binary.LittleEndian.PutUint16(id[14:], uint16(rng.Uint64()))
	return "req_" + id.String()
}

// testRequestID returns a request ID for the property tests: half node IDs of now (which
// today's partition takes), half of another form (which request_records_high takes).
func testRequestID(rng *rand.Rand) string {
	if rng.IntN(2) == 0 {
		return nodeRequestID(time.Now(), rng)
	}
	return fmt.Sprintf("req_x%016x", rng.Uint64())
}

// utcDay is the start of t's UTC day.
func UTCDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// partitionOf names the partition holding the record.
func partitionOf(t *testing.T, conn *pgx.Conn, id string) string {
	t.Helper()
	var name string
	if err := conn.QueryRow(context.Background(), `SELECT tableoid::regclass::text FROM request_records WHERE request_id = $1`, id).Scan(&name); err != nil {
		t.Fatalf("partition of %s: %v", id, err)
	}
	return name
}

// The Go and SQL day bounds agree, and sort as the days do.
func TestDayBoundMatchesMigration(t *testing.T) {
	t.Parallel()
	_, conn := schemaAt(t, 17)
	prev := ""
	for _, d := range []time.Time{
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2020, 1, 1, 13, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 24, 23, 59, 59, 0, time.UTC), time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC),
		time.Date(2039, 9, 7, 0, 0, 0, 0, time.UTC), time.Date(2500, 6, 30, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC),
	} {
		var sql string
		if err := conn.QueryRow(context.Background(), `SELECT request_records_day_bound($1::date)`, d.Format(time.DateOnly)).Scan(&sql); err != nil {
			t.Fatal(err)
		}
		if got := store.DayBound(d); got != sql || got <= prev || len(got) != 30 {
			t.Fatalf("%s: Go %q, SQL %q, previous %q", d, got, sql, prev)
		}
		prev = sql
	}
	if got := store.DayBound(time.Date(10900, 1, 1, 0, 0, 0, 0, time.UTC)); got != "req_8" {
		t.Fatalf("day after the last ULID time: %q", got)
	}
}

// A day's records go to its partition; a record whose day has no partition (not made yet,
// or dropped) is refused alone, its batch applies; records of other forms go to the
// catch-alls; dropping a day drops its records, and a copy sent again is refused, not
// charged again.
func TestRecordDaysPlaceAndRefuse(t *testing.T) {
	t.Parallel()
	day := UTCDay(time.Now()).AddDate(0, 0, 20) // well after the days the migration made
	now := day.Add(12 * time.Hour)
	s, db := storetest.Open(t, store.Config{Logger: quietLogger(), Now: func() time.Time { return now }})
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db.OwnerURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	accts := fundedAccounts(t, s, 1)
	for d := -1; d <= 1; d++ {
		if made, err := s.AddRecordDay(ctx, day.AddDate(0, 0, d)); err != nil || !made {
			t.Fatalf("add day %+d: %v %v", d, made, err)
		}
	}
	if made, err := s.AddRecordDay(ctx, day); err != nil || made {
		t.Fatalf("adding a day again: %v %v", made, err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rec := func(id string, ts time.Time) usage.Record { return record(id, accts[0], ts, 1000, 100) }
	yesterday := rec(nodeRequestID(now.AddDate(0, 0, -1), rng), now.AddDate(0, 0, -1))
	today := rec(nodeRequestID(now, rng), now)
	tomorrow := rec(nodeRequestID(now.Add(20*time.Hour), rng), now.Add(20*time.Hour))
	ahead := rec(nodeRequestID(now.AddDate(0, 0, 3), rng), now)                // no partition yet
	gap := rec(nodeRequestID(now.AddDate(0, 0, -3), rng), now.Add(-time.Hour)) // a day never made
	high, low := rec("x-other-form", now), rec("abc", now)
	rep, err := s.IngestBatch(ctx, usage.Batch{NodeID: "n", BatchID: "b1", Records: []usage.Record{yesterday, today, tomorrow, ahead, gap, high, low}})
	if err != nil || rep.Inserted != 5 || rep.Rejected != 2 {
		t.Fatalf("reply %+v, %v; want 5 stored and 2 refused", rep, err)
	}
	for id, want := range map[string]string{
		yesterday.RequestID: "request_records_" + day.AddDate(0, 0, -1).Format("20060102"),
		today.RequestID:     "request_records_" + day.Format("20060102"),
		tomorrow.RequestID:  "request_records_" + day.AddDate(0, 0, 1).Format("20060102"),
		high.RequestID:      "request_records_high", low.RequestID: "request_records_low",
	} {
		if got := partitionOf(t, conn, id); got != want {
			t.Errorf("%s in %s, want %s", id, got, want)
		}
	}
	if rejected, total, err := s.ListRejected(ctx, 10); err != nil || total != 2 || len(rejected) != 2 {
		t.Fatalf("rejected: %+v %d %v", rejected, total, err)
	}
	// Every read finds the records: by ID, by account, newest first.
	if got, err := s.GetRecord(ctx, accts[0], today.RequestID); err != nil || got.RequestID != today.RequestID {
		t.Fatalf("get: %+v %v", got, err)
	}
	if page, err := s.ListRecords(ctx, store.RecordQuery{AccountID: accts[0], Limit: 10}); err != nil || len(page) != 5 {
		t.Fatalf("list: %d %v", len(page), err)
	}
	if page, err := s.ListRecordsForOperator(ctx, store.OperatorRecordQuery{Limit: 10}); err != nil || len(page) != 5 {
		t.Fatalf("operator list: %d %v", len(page), err)
	}

	// The day ahead gets its partition: the record is stored now.
	if _, err := s.AddRecordDay(ctx, day.AddDate(0, 0, 3)); err != nil {
		t.Fatal(err)
	}
	if rep, err := s.IngestBatch(ctx, usage.Batch{NodeID: "n", BatchID: "b2", Records: []usage.Record{ahead}}); err != nil || rep.Inserted != 1 {
		t.Fatalf("the day ahead, made: %+v %v", rep, err)
	}

	// Dropping yesterday drops its record; a copy sent again is refused, not charged.
	bal, _ := s.Balance(ctx, accts[0])
	if dropped, err := s.DropRecordDay(ctx, day.AddDate(0, 0, -1)); err != nil || !dropped {
		t.Fatalf("drop: %v %v", dropped, err)
	}
	if dropped, err := s.DropRecordDay(ctx, day.AddDate(0, 0, -1)); err != nil || dropped {
		t.Fatalf("drop again: %v %v", dropped, err)
	}
	if _, err := s.GetRecordForOperator(ctx, yesterday.RequestID); err == nil {
		t.Fatal("a dropped day's record is still there")
	}
	rep, err = s.IngestBatch(ctx, usage.Batch{NodeID: "n", BatchID: "b1", Records: []usage.Record{yesterday, today, tomorrow, high, low}})
	if err != nil || rep.Inserted != 0 || rep.Duplicates != 4 || rep.Rejected != 1 {
		t.Fatalf("batch sent again after the drop: %+v %v", rep, err)
	}
	if after, _ := s.Balance(ctx, accts[0]); after != bal {
		t.Fatalf("balance %d after the resend, was %d", after, bal)
	}
	rd, err := s.RecordDays(ctx)
	if err != nil || !rd.First.Equal(UTCDay(time.Now())) && !rd.First.Before(UTCDay(time.Now())) {
		t.Fatalf("record days %+v %v", rd, err)
	}
	has := map[time.Time]bool{}
	for _, d := range rd.Days {
		has[d] = true
	}
	if !has[day] || !has[day.AddDate(0, 0, 3)] || has[day.AddDate(0, 0, -1)] || has[day.AddDate(0, 0, 2)] {
		t.Fatalf("record days %v", rd.Days)
	}
}

// A partition dropped by another control plane after this one last read them: the ingest
// reads them again and refuses the record instead of failing the batch.
func TestIngestAfterAnotherReplicaDroppedADay(t *testing.T) {
	t.Parallel()
	day := UTCDay(time.Now()).AddDate(0, 0, 30)
	now := day.Add(12 * time.Hour)
	clock := func() time.Time { return now }
	ctx := context.Background()
	db := pgtest.NewRoles(t)
	var replicas [2]*store.Store
	for i := range replicas {
		s, err := store.Open(ctx, store.Config{DatabaseURL: db.RuntimeURL, MigrateDatabaseURL: db.OwnerURL, Logger: quietLogger(), Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		replicas[i] = s
	}
	accts := fundedAccounts(t, replicas[0], 1)
	if _, err := replicas[0].AddRecordDay(ctx, day); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	first := record(nodeRequestID(now, rng), accts[0], now, 10, 10)
	if rep, err := replicas[1].IngestBatch(ctx, usage.Batch{Records: []usage.Record{first}}); err != nil || rep.Inserted != 1 {
		t.Fatalf("%+v %v", rep, err)
	}
	if _, err := replicas[0].DropRecordDay(ctx, day); err != nil {
		t.Fatal(err)
	}
	second := record(nodeRequestID(now, rng), accts[0], now, 10, 10)
	if rep, err := replicas[1].IngestBatch(ctx, usage.Batch{Records: []usage.Record{second, record("x-kept", accts[0], now, 10, 10)}}); err != nil || rep.Rejected != 1 || rep.Inserted != 1 {
		t.Fatalf("after the other replica dropped the day: %+v %v", rep, err)
	}
}

// Two control planes make the same days at once: each day is made once, neither fails.
func TestTwoControlPlanesAddRecordDaysConcurrently(t *testing.T) {
	t.Parallel()
	replicas, _ := openReplicas(t, 4)
	ctx := context.Background()
	start := UTCDay(time.Now()).AddDate(0, 0, 10)
	var made [2]int
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for i, s := range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range 12 {
				ok, err := s.AddRecordDay(ctx, start.AddDate(0, 0, d))
				if err != nil {
					errs <- err
					return
				}
				if ok {
					made[i]++
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if made[0]+made[1] != 12 {
		t.Fatalf("days made %v, want 12 in all", made)
	}
	rd, err := replicas[1].RecordDays(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range rd.Days {
		if !d.Before(start) {
			n++
		}
	}
	if n != 12 {
		t.Fatalf("%d partitions from %s, want 12", n, start)
	}
}

// Migration 017 on a populated table: every record is kept, in the partition that takes its
// ID (those stored before stay in the old table, now request_records_low), reads find them,
// a batch sent again is not counted twice, and new records go to their day's partition.
func TestMigrationPartitionsPopulatedRecords(t *testing.T) {
	t.Parallel()
	db, conn := schemaAt(t, 16)
	ctx := context.Background()
	now := time.Now().UTC()
	rng := rand.New(rand.NewPCG(5, 6))
	ids := map[string]string{ // request ID: the partition it must end in
		nodeRequestID(now.AddDate(0, 0, -40), rng): "request_records_low",
		nodeRequestID(now, rng):                    "request_records_low", // today's: the first day is tomorrow
		"abc":                                      "request_records_low",
		"req_0001":                                 "request_records_low",
		"x-legacy":                                 "request_records_high",
		"req_zz":                                   "request_records_high",
		// An ID far ahead (no node writes one): moved to its own day's partition.
		"req_7ZZZZZZZZZ0000000000000000": "request_records_" + time.UnixMilli(int64(ulid.MaxTime())).UTC().Format("20060102"),
	}
	for id := range ids {
		if _, err := conn.Exec(ctx, `INSERT INTO request_records (request_id, ts, account_id, model, status, result, price_micro_sek, routing)
			VALUES ($1, $2, 'acct_old', 'm', 200, 'ok', 7, '{"policy":"se"}')`, id, now.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := store.Open(ctx, store.Config{DatabaseURL: db.RuntimeURL, MigrateDatabaseURL: db.OwnerURL, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var batch []usage.Record
	for id, want := range ids {
		if got := partitionOf(t, conn, id); got != want {
			t.Errorf("%s in %s, want %s", id, got, want)
		}
		r, err := s.GetRecordForOperator(ctx, id)
		if err != nil || r.PriceMicroSEK != 7 || r.Routing == nil || r.Routing.Policy != "se" {
			t.Fatalf("%s after the migration: %+v %v", id, r, err)
		}
		batch = append(batch, r)
	}
	if page, err := s.ListRecords(ctx, store.RecordQuery{AccountID: "acct_old", Limit: 100}); err != nil || len(page) != len(ids) {
		t.Fatalf("listing after the migration: %d records, %v", len(page), err)
	}
	// The same records sent again: all duplicates (the far-ahead one is refused: its day is
	// beyond the partitions the control plane keeps, but its copy stays stored).
	rep, err := s.IngestBatch(ctx, usage.Batch{NodeID: "n", BatchID: "again", Records: batch})
	if err != nil || rep.Inserted != 0 || rep.Duplicates+rep.Rejected != len(ids) {
		t.Fatalf("batch sent again after the migration: %+v %v", rep, err)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM request_records`).Scan(&n); err != nil || n != len(ids) {
		t.Fatalf("%d records, want %d (%v)", n, len(ids), err)
	}
	// A record of the day after tomorrow goes to that day's partition.
	later := nodeRequestID(now.AddDate(0, 0, 2), rng)
	if rep, err := s.IngestBatch(ctx, usage.Batch{Records: []usage.Record{record(later, "acct_old", now, 0, 0)}}); err != nil || rep.Inserted != 1 {
		t.Fatalf("%+v %v", rep, err)
	}
	if got, want := partitionOf(t, conn, later), "request_records_"+now.AddDate(0, 0, 2).Format("20060102"); got != want {
		t.Fatalf("new record in %s, want %s", got, want)
	}
	// The column is in the C collation, as the range bounds need.
	var coll string
	if err := conn.QueryRow(ctx, `SELECT collname FROM pg_attribute a JOIN pg_collation c ON c.oid = a.attcollation
		WHERE a.attrelid = 'request_records'::regclass AND a.attname = 'request_id'`).Scan(&coll); err != nil || coll != "C" {
		t.Fatalf("request_id collation %q %v", coll, err)
	}
}
