// Package chaos is `make chaos`: it runs the real binaries (control plane, data planes,
// provider simulators) on a throwaway Postgres under steady mixed load - streaming and
// not, several accounts, a share of requests to a hostile upstream - and in turn kills the
// control plane, kills a data plane (SIGKILL), restarts Postgres and kills the hostile
// upstream mid-stream. After each scenario it checks the money to the micro-SEK: every
// X-Request-Id answered 200 has its record, what the clients were served is what was
// debited, balance − Σ ledger is 0 for every account, and the spools drained.
package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Config says how to run. Zero values take the defaults of the full run.
type Config struct {
	// BinDir holds simulator, controlplane and dataplane. Required.
	BinDir string
	// WorkDir receives logs and the data planes' spools (default: a temporary directory,
	// removed after a passing run).
	WorkDir string
	// Short runs every scenario at small scale (the make test version).
	Short bool
	// Workers is the number of concurrent clients (default 16, short 6).
	Workers int
	// Accounts is the number of customer accounts (default 4).
	Accounts int
	// Nodes is the number of data planes (default 2).
	Nodes int
	// Warm, Down and Cool are the load before a fault, the time the faulty part stays down
	// and the load after recovery (defaults 10 s, 15 s, 10 s; short 2 s, 2 s, 2 s).
	Warm, Down, Cool time.Duration
	// HostileShare is the share of requests sent to the hostile upstream (default 0.15).
	HostileShare float64
	// Settle bounds the wait for spools to drain and records to arrive after a scenario
	// (default 90 s).
	Settle time.Duration
	// Only runs the named scenarios (default all).
	Only []string
	// Progress receives one line per step (default: discard).
	Progress io.Writer
}

func (c *Config) defaults() error {
	if c.BinDir == "" {
		return errors.New("chaos: BinDir is required")
	}
	def := func(v *time.Duration, full, short time.Duration) {
		if *v <= 0 {
			*v = full
			if c.Short {
				*v = short
			}
		}
	}
	def(&c.Warm, 10*time.Second, 2*time.Second)
	def(&c.Down, 15*time.Second, 2*time.Second)
	def(&c.Cool, 10*time.Second, 2*time.Second)
	def(&c.Settle, 90*time.Second, 60*time.Second)
	if c.Workers <= 0 {
		c.Workers = 16
		if c.Short {
			c.Workers = 6
		}
	}
	if c.Accounts <= 0 {
		c.Accounts = 4
	}
	if c.Nodes <= 0 {
		c.Nodes = 2
	}
	if c.HostileShare <= 0 {
		c.HostileShare = 0.15
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return nil
}

// Run starts the stack, runs the scenarios in turn and returns their rows. The error is
// for a run that could not be carried out (the stack did not start); failed checks are
// in the rows' verdicts.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	tmp := cfg.WorkDir == ""
	if tmp {
		dir, err := os.MkdirTemp("", "gateway-chaos-")
		if err != nil {
			return nil, err
		}
		cfg.WorkDir = dir
	}
	s, err := startStack(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("chaos: start the stack: %w (logs in %s)", err, cfg.WorkDir)
	}
	rep := &Report{Config: cfg}
	for _, sc := range scenarios {
		if len(cfg.Only) > 0 && !contains(cfg.Only, sc.name) {
			continue
		}
		row, err := s.run(ctx, sc)
		if err != nil {
			row.Verdict = "FAIL"
			row.Notes = append(row.Notes, "scenario could not run: "+err.Error())
		}
		rep.Rows = append(rep.Rows, row)
		s.step("%s: %s", sc.name, row.Verdict)
		if ctx.Err() != nil {
			break
		}
	}
	s.close()
	rep.LogDir = cfg.WorkDir
	if tmp && rep.Passed() {
		os.RemoveAll(cfg.WorkDir)
		rep.LogDir = ""
	}
	return rep, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
