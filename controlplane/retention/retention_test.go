package retention_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

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
