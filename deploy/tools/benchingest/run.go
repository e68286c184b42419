// Package ingest is `make bench-ingest`: a throwaway Postgres and one real control plane,
// and simulated data-plane nodes (goroutines of this process, no inference) that post
// usage batches over the real node API (shared/internalapi's path and headers, a node
// token, records as the meter writes them) back to back. Per scenario (node count × batch
// size) it reports the records ingested per second, the CPU seconds per 1,000 records of
// the control plane and of Postgres (all its processes, from /proc), batch latency p50
// and p99, and how much the tables and their indexes grew per million records; the
// machine's load average is kept with every scenario, since the machine may be shared.
// It writes ingest.json, ingest.md and ingest.svg into the output directory.
package benchingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/sekgate/gateway/deploy/tools/proc"
)

// Config says what to run.
type Config struct {
	// BinDir holds the controlplane binary. Required.
	BinDir string
	// OutDir receives the results (created). Required.
	OutDir string
	// WorkDir receives logs and keys (default: a temporary directory, removed after).
	WorkDir string
	// Short runs fewer, shorter scenarios: a quick check.
	Short bool
	// Nodes and Batches are the node counts and batch sizes to combine (defaults by mode).
	Nodes, Batches []int
	// Duration of each scenario (default 20 s, short 4 s).
	Duration time.Duration
	// Accounts the records are spread over (default 50).
	Accounts int
	// Progress receives one line per step (default: discard).
	Progress io.Writer
	// SizeFill is how many records the table-size rows fill the records with before their
	// second run (default 4,000,000; short 200,000; negative: no table-size rows).
	SizeFill int64
	// ProfileDir, when set, receives a CPU profile of the control plane per scenario
	// (controlplane-<nodes>x<batch>.pprof, from its ops listener's /debug/pprof/profile,
	// for most of the scenario; `go tool pprof` reads it).
	ProfileDir string
}

func (c *Config) defaults() error {
	if c.BinDir == "" || c.OutDir == "" {
		return errors.New("benchingest: BinDir and OutDir are required")
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if len(c.Nodes) == 0 {
		c.Nodes = []int{1, 4, 16}
		if c.Short {
			c.Nodes = []int{1, 4}
		}
	}
	if len(c.Batches) == 0 {
		c.Batches = []int{10, 100, 500, 2000}
		if c.Short {
			c.Batches = []int{100, 500}
		}
	}
	if c.Duration <= 0 {
		c.Duration = 20 * time.Second
		if c.Short {
			c.Duration = 4 * time.Second
		}
	}
	if c.Accounts <= 0 {
		c.Accounts = 50
	}
	if c.SizeFill == 0 {
		c.SizeFill = 4_000_000
		if c.Short {
			c.SizeFill = 200_000
		}
	}
	return nil
}

// Run starts the stack, runs every scenario and writes the results. The report holds
// whatever was measured, also when an error ends the run early.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if cfg.WorkDir == "" {
		dir, err := os.MkdirTemp("", "benchingest-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		cfg.WorkDir = dir
	}
	mode := "full"
	if cfg.Short {
		mode = "short"
	}
	rep := &Report{Mode: mode, Started: time.Now().UTC(), Cores: runtime.NumCPU(), Accounts: cfg.Accounts,
		Duration: cfg.Duration.Seconds(), Command: command(cfg), SizeFill: max(cfg.SizeFill, 0)}
	s, err := startStack(ctx, cfg)
	if err != nil {
		return rep, err
	}
	defer s.close()
	// Warm-up: the first batches pay for connections, plans and caches.
	if _, _, err := drive(ctx, s, 1, 100, 2*time.Second, 1); err != nil {
		return rep, fmt.Errorf("warm-up: %w", err)
	}
	seed := uint64(2)
	// run resets the records, fills them with fill records, and runs one scenario.
	run := func(nodes, size int, fillN int64) (Result, error) {
		if err := reset(ctx, s); err != nil {
			return Result{}, err
		}
		if fillN > 0 {
			fmt.Fprintf(cfg.Progress, "  filling the records with %d\n", fillN)
			took, err := fill(ctx, s, fillN, seed)
			if err != nil {
				return Result{}, err
			}
			fmt.Fprintf(cfg.Progress, "    filled in %.1f s\n", took.Seconds())
		}
		at, err := countRecords(ctx, s)
		if err != nil {
			return Result{}, err
		}
		fmt.Fprintf(cfg.Progress, "  scenario: %d nodes, batches of %d, %s, from %d records\n", nodes, size, cfg.Duration, at)
		res, err := scenario(ctx, s, nodes, size, cfg.Duration, seed)
		seed++
		res.StartRecords = at
		if err != nil {
			return res, fmt.Errorf("%d nodes, batches of %d: %w", nodes, size, err)
		}
		fmt.Fprintf(cfg.Progress, "    %.0f records/s, %.4f CPU-s per 1,000 (control plane %.4f, Postgres %.4f), p50 %.1f ms, p99 %.1f ms, load %s\n",
			res.RecordsPerSec, res.CPUPer1000(), res.CPPer1000, res.PGPer1000, res.P50MS, res.P99MS, res.LoadAfter)
		return res, nil
	}
	for _, nodes := range cfg.Nodes {
		for _, size := range cfg.Batches {
			res, err := run(nodes, size, 0)
			if err != nil {
				return rep, err
			}
			rep.Results = append(rep.Results, res)
		}
	}
	// The table-size rows: the largest batch with the fewest and the most nodes, each on
	// empty records and then on records filled first, back to back.
	if cfg.SizeFill > 0 {
		size := slices.Max(cfg.Batches)
		for _, nodes := range slices.Compact([]int{slices.Min(cfg.Nodes), slices.Max(cfg.Nodes)}) {
			for _, fillN := range []int64{0, cfg.SizeFill} {
				res, err := run(nodes, size, fillN)
				if err != nil {
					return rep, fmt.Errorf("table size: %w", err)
				}
				rep.TableSize = append(rep.TableSize, res)
			}
		}
	}
	limit := int64(300_000)
	if cfg.Short {
		limit = 50_000
	}
	fmt.Fprintf(cfg.Progress, "  retention: deleting up to %d records (at most half) as the retention job does, then VACUUM; dropping the days holding the rest\n", limit)
	ret, err := retention(ctx, s, limit)
	if err != nil {
		return rep, fmt.Errorf("retention: %w", err)
	}
	rep.Retention = &ret
	fmt.Fprintf(cfg.Progress, "    %d deleted, %.0f/s; Postgres %.4f CPU-s per 1,000 to delete, %.4f to vacuum; %d dropped with %d days in %.1f ms, Postgres %.5f CPU-s per 1,000\n",
		ret.Deleted, ret.DeletedPerSecond, ret.DeletePGPer1000, ret.VacuumPGPer1000, ret.Dropped, ret.DroppedDays, ret.DropMS, ret.DropPGPer1000)
	return rep, rep.Write(cfg.OutDir)
}

// scenario runs one node count and batch size and measures it.
func scenario(ctx context.Context, s *stack, nodes, size int, d time.Duration, seed uint64) (Result, error) {
	res := Result{Nodes: nodes, BatchSize: size, LoadBefore: loadAvg()}
	before, err := sizes(ctx, s.db)
	if err != nil {
		return res, err
	}
	cp0, _ := proc.CPUSeconds(s.cp.PID())
	pg0 := proc.TreeCPUSeconds(s.pgPID)
	me0, _ := proc.CPUSeconds(os.Getpid())
	busy0, tot0 := proc.MachineCPU()
	start := time.Now()
	profiled := s.profile(ctx, nodes, size, d)
	lat, n, err := drive(ctx, s, nodes, size, d, seed)
	el := time.Since(start).Seconds()
	cp1, _ := proc.CPUSeconds(s.cp.PID())
	pg1 := proc.TreeCPUSeconds(s.pgPID)
	me1, _ := proc.CPUSeconds(os.Getpid())
	busy1, tot1 := proc.MachineCPU()
	if err != nil {
		return res, err
	}
	if n == 0 {
		return res, errors.New("no batch was confirmed")
	}
	after, err := sizes(ctx, s.db)
	if err != nil {
		return res, err
	}
	res.Records, res.Batches, res.Seconds = n, len(lat), el
	res.RecordsPerSec = float64(n) / el
	res.CPPer1000 = (cp1 - cp0) / float64(n) * 1000
	res.PGPer1000 = (pg1 - pg0) / float64(n) * 1000
	res.DriverPer1000 = (me1 - me0) / float64(n) * 1000
	if tot1 > tot0 {
		res.MachineBusyPct = 100 * (busy1 - busy0) / (tot1 - tot0)
		res.OthersBusyPct = max(0, 100*((busy1-busy0)-(cp1-cp0)-(pg1-pg0)-(me1-me0))/(tot1-tot0))
	}
	res.P50MS, res.P99MS = percentile(lat, 50), percentile(lat, 99)
	res.Growth = map[string]float64{}
	for k, v := range after {
		res.Growth[k] = float64(v-before[k]) / float64(n) * 1e6 / (1 << 20)
	}
	res.LoadAfter = loadAvg()
	if err := <-profiled; err != nil {
		return res, err
	}
	// The vacuum the scenario's records still need (autovacuum's work, done at once so it is
	// counted: it visits each new page once, during the scenario or after it).
	pg2 := proc.TreeCPUSeconds(s.pgPID)
	if _, err := s.db.Exec(ctx, `VACUUM request_records`); err != nil {
		return res, fmt.Errorf("vacuum: %w", err)
	}
	res.VacuumPGPer1000 = (proc.TreeCPUSeconds(s.pgPID) - pg2) / float64(n) * 1000
	return res, nil
}

// loadAvg returns the first three fields of /proc/loadavg (what uptime shows).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func command(cfg Config) string {
	if cfg.Short {
		return "make bench-ingest-short"
	}
	return "make bench-ingest"
}

// Write writes ingest.json, ingest.md and ingest.svg into dir.
func (r *Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	j, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "ingest.json"), append(j, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "ingest.md"), []byte(r.Markdown()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "ingest.svg"), []byte(r.SVG()), 0o644)
}
