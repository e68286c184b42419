// Package retention removes request records, and usage records the control plane
// rejected, older than a configured number of days, so neither table grows without bound,
// and keeps the request records' day partitions made ahead of time.
//
// Request records are partitioned by the UTC day of their request IDs (controlplane/store,
// migration 017). Each run makes the partitions of the days from the retention's cutoff up
// to Ahead days from now that are missing (after an outage too), drops the partition of
// every day that ended before the cutoff, whole (a DROP TABLE, no row by row delete and no
// vacuum), and then deletes what is left older than the cutoff (records of other ID forms,
// in the catch-all partitions, and the rare record whose time is older than its ID's day)
// oldest first in small batches (default 1,000 rows, with a short pause between batches) so
// the job never holds many locks or produces one huge transaction. It runs at start and then
// every Interval (default 1 h). Only the records go: ledger entries (the money) and the
// daily usage aggregates (usage_30d) are kept. The per-minute series of the live service
// view (series_minutes) are kept SeriesDays (default 14) and deleted the same way, in
// batches, oldest minute first. Several control-plane replicas may run it at
// once: partitions are made and dropped under an advisory lock, and delete batches skip rows
// locked by another replica.
package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sekgate/gateway/controlplane/store"
)

// Deleter deletes up to batch records (or rejected records) older than cutoff and says
// how many it deleted, and makes and drops the records' day partitions (*store.Store
// implements it).
type Deleter interface {
	DeleteRecordsBefore(ctx context.Context, cutoff time.Time, batch int) (int, error)
	DeleteRejectedBefore(ctx context.Context, cutoff time.Time, batch int) (int, error)
	DeleteSeriesBefore(ctx context.Context, cutoff time.Time, batch int) (int, error)
	RecordDays(ctx context.Context) (store.RecordDays, error)
	AddRecordDay(ctx context.Context, day time.Time) (bool, error)
	DropRecordDay(ctx context.Context, day time.Time) (bool, error)
}

// Config configures a Job.
type Config struct {
	// Store deletes the records. Required.
	Store Deleter
	// Days is how long records are kept (default 90). A day's partition is dropped once
	// the whole day is older, so records are kept Days to Days + 1 days.
	Days int
	// SeriesDays is how long the per-minute series are kept (default DefaultSeriesDays):
	// rows of minutes older than that are deleted.
	SeriesDays int
	// Ahead is how many days after today get their partitions made ahead of time (default
	// 3; the ingest accepts record times up to a day ahead).
	Ahead int
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
	// "rejected_records", "series_minutes"); the ops metrics count them.
	OnDeleted func(table string, n int)
	// OnDropped, when set, is told each day partition of request records dropped.
	OnDropped func()
}

// DefaultSeriesDays is Config.SeriesDays' default.
const DefaultSeriesDays = 14

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
	if cfg.SeriesDays < 0 {
		return nil, fmt.Errorf("retention: series days must not be negative, got %d", cfg.SeriesDays)
	}
	if cfg.SeriesDays == 0 {
		cfg.SeriesDays = DefaultSeriesDays
	}
	if cfg.Ahead <= 0 {
		cfg.Ahead = 3
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

// MakeDays makes the partitions of request records' days from the day after the
// cutoff's (the cutoff's own day is next to be dropped; a replica whose clock lags must not
// make it again) up to Ahead days from today, where missing, and returns how many it made.
// The control plane runs it before it serves, so today's records have their partition.
func (j *Job) MakeDays(ctx context.Context) (int, error) {
	now := j.cfg.Now()
	rd, err := j.cfg.Store.RecordDays(ctx)
	if err != nil {
		return 0, fmt.Errorf("retention: read record days: %w", err)
	}
	have := make(map[time.Time]bool, len(rd.Days))
	for _, d := range rd.Days {
		have[d] = true
	}
	from := store.UTCDay(now.AddDate(0, 0, -j.cfg.Days)).AddDate(0, 0, 1)
	if from.Before(rd.First) {
		from = rd.First
	}
	made := 0
	for d, last := from, store.UTCDay(now).AddDate(0, 0, j.cfg.Ahead); !d.After(last); d = d.AddDate(0, 0, 1) {
		if have[d] {
			continue
		}
		ok, err := j.cfg.Store.AddRecordDay(ctx, d)
		if err != nil {
			return made, fmt.Errorf("retention: make the records' partition of %s: %w", d.Format(time.DateOnly), err)
		}
		if ok {
			made++
		}
	}
	return made, nil
}

// dropDays drops the partition of every day of request records that ended before the
// cutoff and returns how many it dropped.
func (j *Job) dropDays(ctx context.Context, cutoff time.Time) (int, error) {
	rd, err := j.cfg.Store.RecordDays(ctx)
	if err != nil {
		return 0, fmt.Errorf("retention: read record days: %w", err)
	}
	dropped := 0
	for _, d := range rd.Days {
		if d.AddDate(0, 0, 1).After(cutoff) {
			continue
		}
		ok, err := j.cfg.Store.DropRecordDay(ctx, d)
		if err != nil {
			return dropped, fmt.Errorf("retention: drop the records' partition of %s: %w", d.Format(time.DateOnly), err)
		}
		if ok {
			dropped++
			j.cfg.Logger.Info("retention dropped a day of request records", "day", d.Format(time.DateOnly), "days", j.cfg.Days)
			if j.cfg.OnDropped != nil {
				j.cfg.OnDropped()
			}
		}
	}
	return dropped, nil
}

// RunOnce makes the days' partitions ahead, drops those of days older than Days, then
// deletes every record and every rejected record older than Days, and every series minute
// older than SeriesDays, batch by batch, and returns how many records and rejected records
// it deleted (not counting the dropped days' records; series rows are told to OnDeleted
// and logged). A failure to make or drop partitions (a lock not granted in time) does not
// stop the deletes; it is returned after them.
func (j *Job) RunOnce(ctx context.Context) (int, error) {
	now := j.cfg.Now()
	cutoff := now.AddDate(0, 0, -j.cfg.Days)
	_, errMake := j.MakeDays(ctx)
	_, errDrop := j.dropDays(ctx, cutoff)
	total := 0
	for _, step := range []struct {
		what, table string
		cutoff      time.Time
		del         func(context.Context, time.Time, int) (int, error)
	}{
		{"records", "records", cutoff, j.cfg.Store.DeleteRecordsBefore},
		{"rejected records", "rejected_records", cutoff, j.cfg.Store.DeleteRejectedBefore},
		{"series minutes", "series_minutes", now.AddDate(0, 0, -j.cfg.SeriesDays), j.cfg.Store.DeleteSeriesBefore},
	} {
		n, err := j.deleteAll(ctx, step.table, step.cutoff, step.del)
		if step.table == "series_minutes" {
			if n > 0 {
				j.cfg.Logger.Info("retention deleted old series minutes", "deleted", n, "days", j.cfg.SeriesDays)
			}
		} else {
			total += n
		}
		if err != nil {
			return total, errors.Join(errMake, errDrop, fmt.Errorf("retention: delete %s before %s: %w", step.what, step.cutoff.Format(time.RFC3339), err))
		}
	}
	return total, errors.Join(errMake, errDrop)
}

// deleteAll runs del batch after batch until a batch deletes fewer rows than BatchSize,
// and returns how many rows it deleted.
func (j *Job) deleteAll(ctx context.Context, table string, cutoff time.Time, del func(context.Context, time.Time, int) (int, error)) (int, error) {
	total := 0
	for {
		n, err := del(ctx, cutoff, j.cfg.BatchSize)
		total += n
		if n > 0 && j.cfg.OnDeleted != nil {
			j.cfg.OnDeleted(table, n)
		}
		if err != nil || n < j.cfg.BatchSize {
			return total, err
		}
		select {
		case <-ctx.Done():
			return total, ctx.Err()
		case <-time.After(j.cfg.Pause):
		}
	}
}
