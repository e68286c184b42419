package retention_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/sekgate/gateway/controlplane/pgtest"
	"github.com/sekgate/gateway/controlplane/retention"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/controlplane/store/storetest"
	"github.com/sekgate/gateway/shared/usage"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestRetentionDeletesOnlyOldRecords(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, _ := storetest.Open(t, store.Config{Logger: log})
	a, _ := st.CreateAccount(ctx, "acme", "se")
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	var b usage.Batch
	for i := 0; i < 25; i++ { // ages 0, 5, 10, ... 120 days
		b.Records = append(b.Records, usage.Record{RequestID: fmt.Sprint("r", i), TS: now.AddDate(0, 0, -5*i), AccountID: a.ID,
			Model: "m", Status: 200, Result: "ok"})
	}
	if rep, err := st.IngestBatch(ctx, b); err != nil || rep.Inserted != 25 {
		t.Fatal(rep, err)
	}
	for _, tc := range []struct {
		days, wantDeleted, wantLeft int
	}{
		{100, 4, 21}, // ages 105..120
		{90, 2, 19},  // ages 95, 100
		{30, 12, 7},  // ages 35..90
		{30, 0, 7},   // nothing left to do
	} {
		j, err := retention.New(retention.Config{Store: st, Days: tc.days, BatchSize: 3, Pause: time.Millisecond, Logger: log, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		n, err := j.RunOnce(ctx)
		if err != nil || n != tc.wantDeleted {
			t.Fatalf("days %d: deleted %d (%v), want %d", tc.days, n, err, tc.wantDeleted)
		}
		recs, _ := st.ListRecords(ctx, store.RecordQuery{AccountID: a.ID, Limit: 100})
		if len(recs) != tc.wantLeft {
			t.Fatalf("days %d: %d left, want %d", tc.days, len(recs), tc.wantLeft)
		}
	}
	if _, err := retention.New(retention.Config{Store: st, Days: -1}); err == nil {
		t.Fatal("negative days accepted")
	}
}

// Rejected usage records are kept as long as request records, then deleted, in batches.
func TestRetentionDeletesOldRejectedRecords(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, _ := storetest.Open(t, store.Config{Logger: log})
	var b usage.Batch
	for i := 0; i < 7; i++ { // no account: each is rejected
		b.Records = append(b.Records, usage.Record{RequestID: fmt.Sprint("bad", i), TS: time.Now(), Result: "ok"})
	}
	if rep, err := st.IngestBatch(ctx, b); err != nil || rep.Rejected != 7 {
		t.Fatal(rep, err)
	}
	deleted := map[string]int{} // what OnDeleted was told, by table
	for _, tc := range []struct {
		ahead    time.Duration
		wantLeft int64
	}{{0, 7}, {91 * 24 * time.Hour, 0}} {
		j, err := retention.New(retention.Config{Store: st, Days: 90, BatchSize: 3, Pause: time.Millisecond, Logger: log,
			Now: func() time.Time { return time.Now().Add(tc.ahead) }, OnDeleted: func(table string, n int) { deleted[table] += n }})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := j.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if _, total, err := st.ListRejected(ctx, 10); err != nil || total != tc.wantLeft {
			t.Fatalf("%s ahead: %d rejected records left (%v), want %d", tc.ahead, total, err, tc.wantLeft)
		}
	}
	if len(deleted) != 1 || deleted["rejected_records"] != 7 {
		t.Errorf("OnDeleted told %v, want 7 rejected_records", deleted)
	}
}

// nodeID returns a request ID as a node makes them at t ("req_" and a ULID).
func nodeID(t time.Time) string {
	return "req_" + ulid.MustNew(ulid.Timestamp(t), rand.Reader).String()
}

// Day partitions: made ahead from the cutoff's next day up to Ahead days from today (the
// days missed while no control plane ran among them), dropped whole once older than the
// retention, with their records and nothing else; a copy of a dropped record is refused.
func TestRetentionDropsDayPartitions(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	today := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 40) // after the days the migration made
	now := today.Add(13 * time.Hour)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	st, _ := storetest.Open(t, store.Config{Logger: log, Now: clock, RecordRetention: 10 * 24 * time.Hour})
	a, _ := st.CreateAccount(ctx, "acme", "se")
	dropped := 0
	j, err := retention.New(retention.Config{Store: st, Days: 10, Ahead: 2, Logger: log, Now: clock, OnDropped: func() { dropped++ }})
	if err != nil {
		t.Fatal(err)
	}
	days := func() map[string]bool {
		rd, err := st.RecordDays(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, d := range rd.Days {
			out[d.Format(time.DateOnly)] = true
		}
		return out
	}
	day := func(n int) string { return today.AddDate(0, 0, n).Format(time.DateOnly) }
	if _, err := j.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	dropped = 0 // the days the migration made, before the clock's
	got := days()
	for n := -9; n <= 2; n++ { // the cutoff's day (-10) is not made
		if !got[day(n)] {
			t.Fatalf("day %s not made: %v", day(n), got)
		}
	}
	if got[day(-10)] || got[day(3)] {
		t.Fatalf("days made beyond the window: %v", got)
	}
	// A record on each of days -9 to 0 (record time and ID alike), and one of another form.
	var b usage.Batch
	for n := -9; n <= 0; n++ {
		ts := now.AddDate(0, 0, n)
		b.Records = append(b.Records, usage.Record{RequestID: nodeID(ts), TS: ts, AccountID: a.ID, Model: "m", Status: 200, Result: "ok"})
	}
	b.Records = append(b.Records, usage.Record{RequestID: "x-other", TS: now.AddDate(0, 0, -9), AccountID: a.ID, Model: "m", Status: 200, Result: "ok"})
	if rep, err := st.IngestBatch(ctx, b); err != nil || rep.Inserted != 11 {
		t.Fatal(rep, err)
	}
	// Three days on (cutoff: day -7, 13:00): days -9 and -8 ended before it and are
	// dropped; the other-form record of day -9 is deleted by its time; days 3 to 5 are made.
	mu.Lock()
	now = now.AddDate(0, 0, 3)
	mu.Unlock()
	n, err := j.RunOnce(ctx)
	if err != nil || n != 1 || dropped != 2 {
		t.Fatalf("deleted %d (%v), dropped %d days; want 1 and 2", n, err, dropped)
	}
	got = days()
	for n := -7; n <= 5; n++ {
		if !got[day(n)] {
			t.Fatalf("day %s missing: %v", day(n), got)
		}
	}
	if got[day(-8)] || got[day(-9)] {
		t.Fatalf("old days kept: %v", got)
	}
	recs, _ := st.ListRecords(ctx, store.RecordQuery{AccountID: a.ID, Limit: 100})
	if len(recs) != 8 {
		t.Fatalf("%d records left, want 8", len(recs))
	}
	// The daily aggregates keep the dropped days' usage.
	if u, err := st.UsageSince(ctx, a.ID, today.AddDate(0, 0, -30)); err != nil || len(u) != 1 || u[0].Requests != 11 {
		t.Fatalf("usage after the drop: %+v %v", u, err)
	}
	// A copy of a record of a dropped day is refused, even with a recent time.
	old := b.Records[0]
	old.TS = clock()
	if rep, err := st.IngestBatch(ctx, usage.Batch{Records: []usage.Record{old}}); err != nil || rep.Rejected != 1 {
		t.Fatalf("copy of a dropped record: %+v %v", rep, err)
	}
}

// Two control planes run the job at once: every day is made once and dropped once, and
// neither run fails.
func TestRetentionJobsOfTwoControlPlanes(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, db := storetest.Open(t, store.Config{Logger: log})
	other, err := store.Open(ctx, store.Config{DatabaseURL: db.RuntimeURL, Logger: log, SkipMigrations: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	today := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 60)
	for i, now := range []time.Time{today, today.AddDate(0, 0, 7)} {
		var made, dropped atomic.Int64
		var wg sync.WaitGroup
		for _, s := range []*store.Store{st, other} {
			j, err := retention.New(retention.Config{Store: s, Days: 5, Ahead: 3, Logger: log, Now: func() time.Time { return now },
				OnDropped: func() { dropped.Add(1) }})
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := j.MakeDays(ctx)
				made.Add(int64(n))
				if err != nil {
					t.Error(err)
				}
				if _, err := j.RunOnce(ctx); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		rd, err := st.RecordDays(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var in int
		for _, d := range rd.Days {
			if !d.Before(now.AddDate(0, 0, -4)) && !d.After(now.AddDate(0, 0, 3)) {
				in++
			}
		}
		if in != 8 {
			t.Fatalf("at %s: %d days in the window, want 8 (%v)", now.Format(time.DateOnly), in, rd.Days)
		}
		if i == 1 && dropped.Load() != 6 { // days -4 to +1 of the first run's window (cutoff: day +2)
			t.Fatalf("dropped %d days, want 6", dropped.Load())
		}
	}
}

// The per-minute series are kept SeriesDays, then deleted in batches, oldest first;
// newer minutes stay.
func TestRetentionDeletesOldSeriesMinutes(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, _ := storetest.Open(t, store.Config{Logger: log})
	a, _ := st.CreateAccount(ctx, "acme", "se")
	now := time.Now().UTC().Truncate(time.Minute)
	var b usage.Batch
	for i, age := range []int{0, 1, 13, 15, 20, 29} { // days
		b.Records = append(b.Records, usage.Record{RequestID: fmt.Sprint("s", i), TS: now.AddDate(0, 0, -age), AccountID: a.ID,
			Model: "m", Status: 200, Result: "ok"})
	}
	if rep, err := st.IngestBatch(ctx, b); err != nil || rep.Inserted != 6 {
		t.Fatal(rep, err)
	}
	minutes := func() int {
		points, err := st.Series(ctx, store.SeriesQuery{Dimension: store.DimAccount, Key: a.ID, From: now.AddDate(0, 0, -30),
			To: now.Add(time.Minute), Step: 24 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range points {
			n += int(p.Requests)
		}
		return n
	}
	deleted := map[string]int{}
	for _, tc := range []struct{ days, left int }{{0, 3}, {10, 2}, {10, 2}} { // 0: the default, 14 days
		j, err := retention.New(retention.Config{Store: st, SeriesDays: tc.days, BatchSize: 2, Pause: time.Millisecond, Logger: log,
			Now: func() time.Time { return now }, OnDeleted: func(table string, n int) { deleted[table] += n }})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := j.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if got := minutes(); got != tc.left {
			t.Fatalf("series days %d: %d minutes left, want %d", tc.days, got, tc.left)
		}
	}
	// Each record made a row per dimension it has (account, model, node): 4 records gone.
	if deleted["series_minutes"] != 4*3 {
		t.Errorf("OnDeleted told %v, want 12 series_minutes", deleted)
	}
	if _, err := retention.New(retention.Config{Store: st, SeriesDays: -1}); err == nil {
		t.Fatal("negative series days accepted")
	}
}
