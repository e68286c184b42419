// Package retention deletes request records, and usage records the control plane
// rejected, older than a configured number of days, so neither table grows without bound.
//
// Records are deleted oldest first in small batches (default 1,000 rows, with a short
// pause between batches) so the job never holds many locks or produces one huge
// transaction; it runs at start and then every Interval (default 1 h). Only the records
// go: ledger entries (the money) and the daily usage aggregates (usage_30d) are kept.
// Several control-plane replicas may run it at once: batches skip rows locked by another
// replica.
package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Deleter deletes up to batch records (or rejected records) older than cutoff and says
// how many it deleted (*store.Store implements it).
type Deleter interface {
	DeleteRecordsBefore(ctx context.Context, cutoff time.Time, batch int) (int, error)
	DeleteRejectedBefore(ctx context.Context, cutoff time.Time, batch int) (int, error)
}

// Config configures a Job.
type Config struct {
	// Store deletes the records. Required.
	Store Deleter
	// Days is how long records are kept (default 90).
	Days int
	// Interval between runs (default 1 h).
	Interval time.Duration
	// BatchSize is the number of rows per delete (default 1000).
	BatchSize int
	// Pause between batches (default 50 ms).
	Pause time.Duration
	// Logger (default slog.Default()) and clock (default time.Now).
	Logger *slog.Logger
	Now    func() time.Time
	// OnDeleted, when set, is told the rows each delete removed, by table ("records",
	// "rejected_records"); the ops metrics count them.
	OnDeleted func(table string, n int)
}

// Job is the retention job.
type Job struct{ cfg Config }

// New validates cfg and fills defaults.
func New(cfg Config) (*Job, error) {
	if cfg.Store == nil {
		return nil, errors.New("retention: store is required")
	}
	if cfg.Days < 0 {
		return nil, fmt.Errorf("retention: days must not be negative, got %d", cfg.Days)
	}
	if cfg.Days == 0 {
		cfg.Days = 90
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Hour
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 1000
	}
	if cfg.Pause <= 0 {
		cfg.Pause = 50 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Job{cfg: cfg}, nil
}

// Run runs the job now and then every Interval until ctx ends.
func (j *Job) Run(ctx context.Context) error {
	t := time.NewTicker(j.cfg.Interval)
	defer t.Stop()
	for {
		if n, err := j.RunOnce(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			j.cfg.Logger.Error("retention run failed", "deleted", n, "err", err)
		} else if n > 0 {
			j.cfg.Logger.Info("retention deleted old request records", "deleted", n, "days", j.cfg.Days)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// RunOnce deletes every record and every rejected record older than Days, batch by batch,
// and returns how many rows it deleted.
func (j *Job) RunOnce(ctx context.Context) (int, error) {
	cutoff := j.cfg.Now().AddDate(0, 0, -j.cfg.Days)
	total := 0
	for _, step := range []struct {
		what, table string
		del         func(context.Context, time.Time, int) (int, error)
	}{{"records", "records", j.cfg.Store.DeleteRecordsBefore}, {"rejected records", "rejected_records", j.cfg.Store.DeleteRejectedBefore}} {
		for {
			n, err := step.del(ctx, cutoff, j.cfg.BatchSize)
			total += n
			if n > 0 && j.cfg.OnDeleted != nil {
				j.cfg.OnDeleted(step.table, n)
			}
			if err != nil {
				return total, fmt.Errorf("retention: delete %s before %s: %w", step.what, cutoff.Format(time.RFC3339), err)
			}
			if n < j.cfg.BatchSize {
				break
			}
			select {
			case <-ctx.Done():
				return total, ctx.Err()
			case <-time.After(j.cfg.Pause):
			}
		}
	}
	return total, nil
}
