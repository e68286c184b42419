package store

import (
	"context"
	"fmt"
	"io/fs"
	"time"
)

// IngestMetrics receives the figures of each usage batch ingest (Config.Metrics); the
// control plane's ops metrics implement it. It is called after the transaction, never
// inside it.
type IngestMetrics interface {
	BatchIngested(IngestStats)
}

// IngestStats are one batch's figures.
type IngestStats struct {
	// Records is how many records the batch carried.
	Records int
	// Inserted, Duplicates: records applied, and records already applied (by request ID).
	Inserted, Duplicates int
	// Rejected counts the refused records by reason code (the Reject* constants).
	Rejected map[string]int
	// Wait is how long the batch waited for one of the store's ingest slots
	// (Config.IngestConcurrency) before its transaction began.
	Wait time.Duration
	// Duration is the time of the transaction, retries included.
	Duration time.Duration
	// Err is non-nil when the batch was not applied (the node resends it).
	Err error
}

type noMetrics struct{}

func (noMetrics) BatchIngested(IngestStats) {}

func rejectedByCode(rs []rejection) map[string]int {
	if len(rs) == 0 {
		return nil
	}
	m := make(map[string]int, 2)
	for _, r := range rs {
		m[r.code]++
	}
	return m
}

// Ready reports whether the store can serve: Postgres answers and every embedded
// migration is applied (a replica started by an older binary, or a schema rolled back,
// is not ready).
func (s *Store) Ready(ctx context.Context) error {
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	files, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("list migrations: %w", err)
	}
	if int(v) < len(files) {
		return fmt.Errorf("schema at migration %d of %d", v, len(files))
	}
	return nil
}
