package benchingest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/deploy/tools/proc"
)

// RetentionResult is what removing ingested records costs Postgres, both ways the retention
// job removes them: row by row (controlplane/store DeleteRecordsBefore, in its batches of
// 1,000; what it does in the catch-all partitions, and what it did for every record before
// the records were partitioned by day), then the VACUUM that reclaims the rows
// (autovacuum's work, done at once so it is counted); and a whole day at once (DropRecordDay:
// the day's partition dropped), for the records left.
type RetentionResult struct {
	// Present is how many records the table held when the measurement began.
	Present          int64   `json:"present"`
	Deleted          int64   `json:"deleted"`
	DeletePGPer1000  float64 `json:"delete_pg_cpu_s_per_1000"`
	VacuumPGPer1000  float64 `json:"vacuum_pg_cpu_s_per_1000"`
	DeletedPerSecond float64 `json:"deleted_per_s"`
	Dropped          int64   `json:"dropped"`
	DroppedDays      int     `json:"dropped_days"`
	DropPGPer1000    float64 `json:"drop_pg_cpu_s_per_1000"`
	DropMS           float64 `json:"drop_ms"`
}

// retention deletes up to limit of the ingested records but no more than half, oldest
// first, as the retention job does for records outside day partitions, and measures
// Postgres's CPU for the deletes and the vacuum after them; then drops the partitions of the
// days holding the rest and measures that.
func retention(ctx context.Context, s *stack, limit int64) (RetentionResult, error) {
	st, err := store.Open(ctx, store.Config{DatabaseURL: s.runtimeURL, SkipMigrations: true, MaxConns: 2,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return RetentionResult{}, fmt.Errorf("open store: %w", err)
	}
	defer st.Close()
	var total int64
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM request_records`).Scan(&total); err != nil {
		return RetentionResult{}, fmt.Errorf("count records: %w", err)
	}
	limit = min(limit, total/2)
	res := RetentionResult{Present: total}
	cutoff := time.Now().Add(time.Hour) // every record is older
	pg0 := proc.TreeCPUSeconds(s.pgPID)
	start := time.Now()
	for res.Deleted < limit {
		n, err := st.DeleteRecordsBefore(ctx, cutoff, int(min(1000, limit-res.Deleted)))
		if err != nil {
			return res, fmt.Errorf("delete records: %w", err)
		}
		res.Deleted += int64(n)
		if n == 0 {
			break
		}
	}
	el := time.Since(start).Seconds()
	pg1 := proc.TreeCPUSeconds(s.pgPID)
	if _, err := s.db.Exec(ctx, `VACUUM request_records`); err != nil {
		return res, fmt.Errorf("vacuum: %w", err)
	}
	pg2 := proc.TreeCPUSeconds(s.pgPID)
	if res.Deleted == 0 {
		return res, fmt.Errorf("no record to delete")
	}
	res.DeletePGPer1000 = (pg1 - pg0) / float64(res.Deleted) * 1000
	res.VacuumPGPer1000 = (pg2 - pg1) / float64(res.Deleted) * 1000
	res.DeletedPerSecond = float64(res.Deleted) / el

	rd, err := st.RecordDays(ctx)
	if err != nil {
		return res, err
	}
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM request_records WHERE request_id >= $1`, store.DayBound(rd.First)).Scan(&res.Dropped); err != nil {
		return res, fmt.Errorf("count records in day partitions: %w", err)
	}
	pg3 := proc.TreeCPUSeconds(s.pgPID)
	start = time.Now()
	for _, d := range rd.Days {
		if d.After(time.Now()) {
			continue
		}
		ok, err := st.DropRecordDay(ctx, d)
		if err != nil {
			return res, err
		}
		if ok {
			res.DroppedDays++
		}
	}
	res.DropMS = float64(time.Since(start).Microseconds()) / 1000
	if res.Dropped > 0 {
		res.DropPGPer1000 = (proc.TreeCPUSeconds(s.pgPID) - pg3) / float64(res.Dropped) * 1000
	}
	return res, nil
}
