package benchrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sekgate/gateway/controlplane/pgtest"
	"github.com/sekgate/gateway/deploy/tools/harness"
	"github.com/sekgate/gateway/deploy/tools/proc"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Model is the canonical model ID the benchmark catalogue serves. The simulator accepts any
// name and the route has no upstream_model, so the same request body works against all
// three targets.
const Model = "bench-chat"

// StackConfig says where the binaries are and where to keep logs and state.
type StackConfig struct {
	// BinDir holds simulator, controlplane, dataplane and bareproxy. Required.
	BinDir string
	// WorkDir receives logs and the data plane's spool (created; required).
	WorkDir string
	// Progress receives one line per step (default: discard).
	Progress io.Writer
	// Variants starts two more data planes beside the default one, for the observability
	// comparison: DPQuiet without the access log, DPTraced tracing every request to a sink
	// in this process.
	Variants bool
}

// Proc is a child process of the stack.
type Proc = proc.Proc

// Stack is the running benchmark set-up: Postgres, control plane, simulator, bare proxy
// and data plane, with an account and a key.
type Stack struct {
	Sim, CP, DP, Bare *Proc
	// DPQuiet, DPTraced and DPAlone are the data-plane variants (StackConfig.Variants;
	// else nil).
	DPQuiet, DPTraced, DPAlone *Proc
	// Key is the API key the data plane accepts.
	Key string
	// PostgresPID is the postmaster's process ID (0 when not found, e.g. an external server).
	PostgresPID int

	cfg       StackConfig
	pg        *pgtest.Cluster
	procs     proc.Group
	admin     harness.Admin // the control plane's admin API
	nodeToken string
	client    *http.Client
	sink      *httptest.Server // the traced variant's OTLP endpoint
	usageSink *httptest.Server // the alone variant's control plane, refusing usage (usagesink.go)
}

// Start brings the stack up. On error everything started so far is stopped.
func Start(ctx context.Context, cfg StackConfig) (_ *Stack, err error) {
	if cfg.BinDir == "" || cfg.WorkDir == "" {
		return nil, errors.New("stack: BinDir and WorkDir are required")
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	client := &http.Client{Timeout: 30 * time.Second}
	s := &Stack{cfg: cfg, client: client, procs: proc.Group{BinDir: cfg.BinDir, LogDir: filepath.Join(cfg.WorkDir, "logs"), Env: RuntimeEnv}}
	if err := s.procs.Prepare("simulator", "controlplane", "dataplane", "bareproxy"); err != nil {
		return nil, fmt.Errorf("stack: %w", err)
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	s.step("starting a throwaway Postgres cluster")
	var dbURL, runtimeURL string // migrate as the owner, serve as the runtime role
	if s.pg, dbURL, runtimeURL, err = harness.StartPostgres(ctx, "bench"); err != nil {
		return nil, fmt.Errorf("stack: %w", err)
	}
	s.PostgresPID = proc.FindChild(os.Getpid(), "postgres")

	addrs := make([]string, 3)
	for i := range addrs {
		if addrs[i], err = proc.FreeAddr(); err != nil {
			return nil, err
		}
	}
	// Latency knobs are zero: the benchmark measures the gateway, not sleeps.
	s.step("starting simulator, control plane and bare proxy")
	if s.Sim, err = s.procs.Start("simulator", "simulator", addrs[0], harness.SimulatorArgs(addrs[0], "bench")...); err != nil {
		return nil, err
	}
	if s.Bare, err = s.procs.Start("bareproxy", "bareproxy", addrs[1], "--listen", addrs[1], "--upstream", addrs[0]); err != nil {
		return nil, err
	}
	plane, err := harness.StartControlPlane(ctx, &s.procs, s.client, cfg.WorkDir, dbURL, runtimeURL)
	if err != nil {
		return nil, err
	}
	s.CP, s.admin, s.nodeToken = plane.Proc, plane.Admin, plane.NodeToken
	pubFile := plane.PublicKeyFile
	if err := s.waitHTTP(ctx, s.Sim, "GET", "/healthz", "", 200); err != nil {
		return nil, err
	}

	s.step("loading the benchmark catalogue, creating an account with credit and a key")
	if err := s.provision(ctx, addrs[0]); err != nil {
		return nil, err
	}

	s.step("starting the data plane")
	if s.DP, err = s.procs.Start("dataplane", "dataplane", addrs[2], harness.DataPlane{Listen: addrs[2], ControlPlaneURL: s.CP.URL(),
		NodeToken: s.nodeToken, PublicKeyFile: pubFile, NodeID: "bench-1", DataDir: filepath.Join(cfg.WorkDir, "node"),
		LogLevel: "warn"}.Args(
		// One load generator on one address opens up to 10,000 streams: no connection caps.
		append([]string{"--max-conns", "-1", "--max-conns-per-addr", "-1"}, quickStop...)...)...); err != nil {
		return nil, err
	}
	if err := s.waitHTTP(ctx, s.DP, "GET", "/v1/models", "Bearer "+s.Key, 200); err != nil {
		return nil, err
	}
	if cfg.Variants {
		if err := s.startVariants(ctx, pubFile); err != nil {
			return nil, err
		}
	}
	for _, p := range []*Proc{s.Sim, s.Bare, s.DP, s.DPQuiet, s.DPTraced, s.DPAlone} {
		if p == nil {
			continue
		}
		if err := s.smoke(ctx, p); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *Stack) step(msg string) { fmt.Fprintf(s.cfg.Progress, "  stack: %s\n", msg) }

// Close stops the processes (SIGTERM, then SIGKILL after 10 s) and Postgres.
func (s *Stack) Close() {
	s.procs.StopAll(10 * time.Second)
	if s.sink != nil {
		s.sink.Close()
	}
	if s.usageSink != nil {
		s.usageSink.Close()
	}
	if s.pg != nil {
		if err := s.pg.Stop(); err != nil {
			fmt.Fprintf(s.cfg.Progress, "  stack: stop postgres: %v\n", err)
		}
		s.pg = nil
	}
}

// Alive returns an error naming the first stack process that has exited.
func (s *Stack) Alive() error { return s.procs.Alive() }

func (s *Stack) waitHTTP(ctx context.Context, p *Proc, method, path, auth string, want int) error {
	return proc.WaitHTTP(ctx, s.client, p, method, path, auth, want, 60*time.Second)
}

// Catalog returns the benchmark catalogue: one chat model served by the simulator at
// simAddr, with room for the open-streams scenario's connections and slow streams.
func Catalog(simAddr string) map[string]any {
	return harness.Catalog(harness.SimModel{ID: Model, RouteID: "bench-sim", Upstream: simAddr, InOre: 1, OutOre: 1,
		ContextTokens: 131072, MaxConns: 20000, IdleTimeoutMS: 120000, TotalTimeoutMS: 900000})
}

func (s *Stack) provision(ctx context.Context, simAddr string) error {
	if err := s.admin.LoadCatalog(ctx, Catalog(simAddr)); err != nil {
		return err
	}
	// Prices are 1 öre per million tokens: a million SEK outlasts any run.
	a, err := s.admin.NewAccount(ctx, harness.AccountSpec{Customer: "Bench AB", Residency: "se",
		CreditSEK: "1000000.00", CreditNote: "benchmark credit", Models: []string{Model}, KeyName: "bench",
		// One customer is the whole load: its own limits, not the node's default 256 in flight.
		Limits: &snapshot.Limits{MaxConcurrent: 1_000_000}})
	if err != nil {
		return err
	}
	s.Key = a.Key
	return nil
}

// smoke sends one chat request through p and checks the answer.
func (s *Stack) smoke(ctx context.Context, p *Proc) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, "POST", p.URL()+"/v1/chat/completions",
			strings.NewReader(`{"model":"`+Model+`","messages":[{"role":"user","content":"hej"}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+s.Key)
		resp, err := s.client.Do(req)
		if err != nil {
			return fmt.Errorf("smoke test of %s: %w", p.Name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 && bytes.Contains(body, []byte(`"usage"`)) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("smoke test of %s: %s: %s", p.Name, resp.Status, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startVariants starts the data planes of the observability comparison, on the same
// control plane and simulator as the default one: --access-log off (metrics only), and
// tracing with every request sampled to an OTLP sink in this process (access log on); and
// the data plane alone, configured as the default one but with its usage batches refused
// (usagesink.go), so that it keeps its records in its spool and nothing ingests while it is
// measured.
func (s *Stack) startVariants(ctx context.Context, pubFile string) error {
	s.sink = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	var err error
	if s.usageSink, err = newUsageSink(s.CP.URL()); err != nil {
		return err
	}
	for _, v := range []struct {
		name  string
		into  **Proc
		cp    string
		extra []string
	}{
		{DataplaneQuiet, &s.DPQuiet, s.CP.URL(), []string{"--access-log", "off"}},
		{DataplaneTraced, &s.DPTraced, s.CP.URL(), []string{"--otlp-endpoint", s.sink.URL + "/v1/traces", "--trace-sample-ratio", "1"}},
		// Its usage is refused on purpose: no point waiting at the end for it to be confirmed.
		{DataplaneAlone, &s.DPAlone, s.usageSink.URL, []string{"--shutdown-flush-timeout", "1s"}},
	} {
		addr, err := proc.FreeAddr()
		if err != nil {
			return err
		}
		s.step("starting the data-plane variant " + v.name)
		args := harness.DataPlane{Listen: addr, ControlPlaneURL: v.cp, NodeToken: s.nodeToken, PublicKeyFile: pubFile,
			NodeID: v.name, DataDir: filepath.Join(s.cfg.WorkDir, v.name), LogLevel: "warn"}.Args(
			append(append([]string{"--max-conns", "-1", "--max-conns-per-addr", "-1"}, quickStop...), v.extra...)...)
		p, err := s.procs.Start(v.name, "dataplane", addr, args...)
		if err != nil {
			return err
		}
		*v.into = p
		if err := s.waitHTTP(ctx, p, "GET", "/v1/models", "Bearer "+s.Key, 200); err != nil {
			return err
		}
	}
	return nil
}

// quickStop makes a benchmark node stop at once on SIGTERM: no load balancer watches its
// readiness, so the production delay before draining (5 s per node) only makes an
// interrupted run slow to leave.
var quickStop = []string{"--shutdown-delay", "0s"}
