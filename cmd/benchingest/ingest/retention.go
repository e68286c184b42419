package ingest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/internal/proc"
)

// RetentionResult is what deleting ingested records costs Postgres: the retention job's own
// delete (controlplane/store DeleteRecordsBefore, in its batches of 1,000), then the VACUUM
// that reclaims the rows (autovacuum's work, done at once so it is counted).
type RetentionResult struct {
	Deleted          int64   `json:"deleted"`
	DeletePGPer1000  float64 `json:"delete_pg_cpu_s_per_1000"`
	VacuumPGPer1000  float64 `json:"vacuum_pg_cpu_s_per_1000"`
	DeletedPerSecond float64 `json:"deleted_per_s"`
}

// retention deletes up to limit of the ingested records, oldest first, as the retention
// job does, and measures Postgres's CPU for the deletes and the vacuum after them.
func retention(ctx context.Context, s *stack, limit int64) (RetentionResult, error) {
	st, err := store.Open(ctx, store.Config{DatabaseURL: s.runtimeURL, SkipMigrations: true, MaxConns: 2,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return RetentionResult{}, fmt.Errorf("open store: %w", err)
	}
	defer st.Close()
	var res RetentionResult
	cutoff := time.Now().Add(time.Hour) // every record is older
	pg0 := proc.TreeCPUSeconds(s.pgPID)
	start := time.Now()
	for res.Deleted < limit {
		n, err := st.DeleteRecordsBefore(ctx, cutoff, 1000)
		if err != nil {
			return res, fmt.Errorf("delete records: %w", err)
		}
		res.Deleted += int64(n)
		if n < 1000 {
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
	return res, nil
}
