package chaos

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sekgate/gateway/controlplane/pgtest"
	"github.com/sekgate/gateway/deploy/tools/harness"
	"github.com/sekgate/gateway/deploy/tools/proc"
)

// Models of the chaos catalogue and their prices (öre per million tokens).
const (
	ModelGood    = "chaos-chat"    // served by a well-behaved simulator
	ModelHostile = "chaos-hostile" // served by a simulator told to misbehave per request
	InOre        = 2000
	OutOre       = 6000
)

// stack is the running deployment: Postgres, control plane, data planes, simulators.
type stack struct {
	cfg      Config
	pg       *pgtest.Cluster
	dbURL    string
	db       *pgxpool.Pool
	cp       *proc.Proc
	dps      []*node
	good     *proc.Proc
	hostile  *proc.Proc
	accounts []harness.Account
	admin    harness.Admin // the control plane's admin API
	client   *http.Client
	procs    proc.Group
}

// node is a data plane with its private ops address (metrics) and whether the load may
// use it (false while the harness has it down).
type node struct {
	*proc.Proc
	ops string
	mu  sync.Mutex
	up  bool
}

func (n *node) isUp() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.up
}

func (n *node) setUp(v bool) {
	n.mu.Lock()
	n.up = v
	n.mu.Unlock()
}

func (s *stack) step(format string, args ...any) {
	fmt.Fprintf(s.cfg.Progress, "  chaos: "+format+"\n", args...)
}

// startStack brings everything up; on error it stops what it started.
func startStack(ctx context.Context, cfg Config) (_ *stack, err error) {
	client := &http.Client{Timeout: 60 * time.Second}
	s := &stack{cfg: cfg, client: client,
		procs: proc.Group{BinDir: cfg.BinDir, LogDir: filepath.Join(cfg.WorkDir, "logs")}}
	if err := s.procs.Prepare("simulator", "controlplane", "dataplane"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	s.step("starting a throwaway Postgres cluster")
	var runtimeURL string // migrate as the owner (dbURL), serve as the runtime role
	if s.pg, s.dbURL, runtimeURL, err = harness.StartPostgres(ctx, "chaos"); err != nil {
		return nil, err
	}
	addr := func() string {
		a, e := proc.FreeAddr()
		if e != nil && err == nil {
			err = e
		}
		return a
	}
	goodAddr, hostileAddr := addr(), addr()
	if err != nil {
		return nil, err
	}
	s.step("starting simulators and the control plane")
	if s.good, err = s.procs.Start("sim-good", "simulator", goodAddr, harness.SimulatorArgs(goodAddr, "good")...); err != nil {
		return nil, err
	}
	if s.hostile, err = s.procs.Start("sim-hostile", "simulator", hostileAddr, harness.SimulatorArgs(hostileAddr, "hostile")...); err != nil {
		return nil, err
	}
	plane, err := harness.StartControlPlane(ctx, &s.procs, s.client, cfg.WorkDir, s.dbURL, runtimeURL)
	if err != nil {
		return nil, err
	}
	s.cp, s.admin = plane.Proc, plane.Admin
	nodeToken, pubFile := plane.NodeToken, plane.PublicKeyFile
	for _, p := range []*proc.Proc{s.good, s.hostile} {
		if err := proc.WaitHTTP(ctx, s.client, p, "GET", "/healthz", "", 200, 60*time.Second); err != nil {
			return nil, err
		}
	}
	s.step("loading the catalogue, creating %d accounts with credit and keys", cfg.Accounts)
	if err := s.provision(ctx, goodAddr, hostileAddr); err != nil {
		return nil, err
	}
	s.step("starting %d data planes", cfg.Nodes)
	for i := range cfg.Nodes {
		dpAddr, opsAddr := addr(), addr()
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("dataplane-%d", i+1)
		p, err := s.procs.Start(name, "dataplane", dpAddr, harness.DataPlane{Listen: dpAddr, ControlPlaneURL: s.cp.URL(),
			NodeToken: nodeToken, PublicKeyFile: pubFile, NodeID: fmt.Sprintf("chaos-%d", i+1),
			DataDir: filepath.Join(cfg.WorkDir, name), LogLevel: "warn"}.Args(
			"--ops-listen", opsAddr, "--usage-batch-interval", "50ms", "--snapshot-wait", "5s")...)
		if err != nil {
			return nil, err
		}
		n := &node{Proc: p, ops: opsAddr, up: true}
		s.dps = append(s.dps, n)
	}
	for _, n := range s.dps {
		if err := s.waitNode(ctx, n); err != nil {
			return nil, err
		}
	}
	if s.db, err = pgxpool.New(ctx, s.dbURL); err != nil {
		return nil, err
	}
	return s, nil
}

// waitCP waits until the control plane runs (node listener) and its admin API answers with
// a compiled snapshot.
func (s *stack) waitCP(ctx context.Context) error {
	return harness.WaitControlPlane(ctx, s.client, s.cp, s.admin, 60*time.Second)
}

// waitNode waits until the node serves every account (snapshot and balances known).
func (s *stack) waitNode(ctx context.Context, n *node) error {
	for _, a := range s.accounts {
		if err := proc.WaitHTTP(ctx, s.client, n.Proc, "GET", "/v1/models", "Bearer "+a.Key, 200, 60*time.Second); err != nil {
			return err
		}
	}
	return nil
}

func (s *stack) close() {
	if s.db != nil {
		s.db.Close()
	}
	s.procs.StopAll(10 * time.Second)
	if s.pg != nil {
		if err := s.pg.Stop(); err != nil {
			s.step("stop postgres: %v", err)
		}
	}
}

func catalog(goodAddr, hostileAddr string) map[string]any {
	model := func(id, addr string) harness.SimModel {
		return harness.SimModel{ID: id, RouteID: id + "-route", Upstream: addr, InOre: InOre, OutOre: OutOre,
			ContextTokens: 32768, IdleTimeoutMS: 10000, TotalTimeoutMS: 60000}
	}
	return harness.Catalog(model(ModelGood, goodAddr), model(ModelHostile, hostileAddr))
}

func (s *stack) provision(ctx context.Context, goodAddr, hostileAddr string) error {
	if err := s.admin.LoadCatalog(ctx, catalog(goodAddr, hostileAddr)); err != nil {
		return err
	}
	for i := range s.cfg.Accounts {
		a, err := s.admin.NewAccount(ctx, harness.AccountSpec{Customer: "Chaos " + strconv.Itoa(i+1) + " AB", Residency: "se",
			CreditSEK: "100000.00", CreditNote: "chaos credit", Models: []string{ModelGood, ModelHostile}, KeyName: "chaos"})
		if err != nil {
			return err
		}
		s.accounts = append(s.accounts, a)
	}
	return nil
}

// spoolDepth returns the node's usage spool depth (records) from its metrics; -1 when
// the node does not answer.
func (s *stack) spoolDepth(ctx context.Context, n *node) int64 {
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+n.ops+"/metrics", nil)
	resp, err := s.client.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "gateway_spool_records "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return int64(f)
			}
		}
	}
	return -1
}
