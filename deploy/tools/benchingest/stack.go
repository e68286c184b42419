package benchingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sekgate/gateway/controlplane/pgtest"
	"github.com/sekgate/gateway/deploy/tools/harness"
	"github.com/sekgate/gateway/deploy/tools/proc"
)

// Model is the catalogue's one model; records are priced at its prices.
const (
	Model          = "bench-chat"
	InOrePerMTok   = 150
	OutOrePerMTok  = 300
	benchCreditSEK = "100000000.00"
)

// stack is a throwaway Postgres and one control plane serving the node API, with funded
// accounts. Nothing else runs: the simulated nodes are goroutines of this process.
type stack struct {
	cp         *proc.Proc
	pg         *pgtest.Cluster
	pgPID      int
	db         *pgxpool.Pool // the schema owner's: sizes and checks
	runtimeURL string        // the control plane's role
	nodeToken  string
	accounts   []string
	procs      proc.Group
	client     *http.Client
	progress   io.Writer
	opsURL     string // the control plane's ops listener (profiles)
	profileDir string // where scenarios' control-plane CPU profiles go; empty: none
}

func startStack(ctx context.Context, cfg Config) (_ *stack, err error) {
	s := &stack{client: &http.Client{Timeout: 60 * time.Second}, progress: cfg.Progress,
		procs: proc.Group{BinDir: cfg.BinDir, LogDir: filepath.Join(cfg.WorkDir, "logs"), Env: []string{"GOGC=400"}}}
	if err := s.procs.Prepare("controlplane"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	fmt.Fprintln(s.progress, "  stack: starting a throwaway Postgres cluster")
	var ownerURL, runtimeURL string
	if s.pg, ownerURL, runtimeURL, err = harness.StartPostgres(ctx, "benchingest"); err != nil {
		return nil, err
	}
	s.runtimeURL = runtimeURL
	if s.pgPID = s.pg.PID(); s.pgPID == 0 {
		return nil, errors.New("postgres: no server process to measure (an external server cannot be measured)")
	}
	fmt.Fprintln(s.progress, "  stack: starting the control plane")
	plane, err := harness.StartControlPlane(ctx, &s.procs, s.client, cfg.WorkDir, ownerURL, runtimeURL)
	if err != nil {
		return nil, err
	}
	s.cp, s.nodeToken, s.opsURL, s.profileDir = plane.Proc, plane.NodeToken, plane.OpsURL, cfg.ProfileDir
	admin := plane.Admin
	if s.db, err = pgxpool.New(ctx, ownerURL); err != nil {
		return nil, fmt.Errorf("connect to postgres: %w", err)
	}
	fmt.Fprintf(s.progress, "  stack: loading the catalogue and creating %d funded accounts\n", cfg.Accounts)
	if err := admin.LoadCatalog(ctx, harness.Catalog(harness.SimModel{ID: Model, RouteID: "bench-route",
		Upstream: "127.0.0.1:9", InOre: InOrePerMTok, OutOre: OutOrePerMTok, ContextTokens: 131072})); err != nil {
		return nil, err
	}
	for i := 0; i < cfg.Accounts; i++ {
		a, err := admin.NewAccount(ctx, harness.AccountSpec{Customer: fmt.Sprintf("Bench %d AB", i), Residency: "se",
			CreditSEK: benchCreditSEK, CreditNote: "benchmark credit", Models: []string{Model}, KeyName: "bench"})
		if err != nil {
			return nil, err
		}
		s.accounts = append(s.accounts, a.ID)
	}
	return s, nil
}

func (s *stack) close() {
	if s.db != nil {
		s.db.Close()
	}
	s.procs.StopAll(10 * time.Second)
	if s.pg != nil {
		if err := s.pg.Stop(); err != nil {
			fmt.Fprintf(s.progress, "  stack: stop postgres: %v\n", err)
		}
	}
}

// profile starts taking a CPU profile of the control plane for the scenario's duration
// less a second (1 to 25 s: the ops listener's write timeout is 30 s) into the profile
// directory; the channel reports how that went once it is written. Without a directory it
// reports nil at once.
func (s *stack) profile(ctx context.Context, nodes, size int, d time.Duration) <-chan error {
	done := make(chan error, 1)
	if s.profileDir == "" {
		done <- nil
		return done
	}
	secs := min(max(int(d/time.Second)-1, 1), 25)
	path := filepath.Join(s.profileDir, fmt.Sprintf("controlplane-%dx%d.pprof", nodes, size))
	go func() {
		done <- func() error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", s.opsURL, secs), nil)
			if err != nil {
				return err
			}
			resp, err := s.client.Do(req)
			if err != nil {
				return fmt.Errorf("control-plane profile: %w", err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != http.StatusOK {
				return fmt.Errorf("control-plane profile: %s %v: %.200s", resp.Status, err, b)
			}
			if err := os.MkdirAll(s.profileDir, 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(s.progress, "    control-plane CPU profile (%d s): %s\n", secs, path)
			return nil
		}()
	}()
	return done
}
