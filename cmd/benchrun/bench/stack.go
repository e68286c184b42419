package bench

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sekgate/gateway/cmd/internal/proc"
	"github.com/sekgate/gateway/controlplane/pgtest"
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
}

// Proc is a child process of the stack.
type Proc = proc.Proc

// Stack is the running benchmark set-up: Postgres, control plane, simulator, bare proxy
// and data plane, with an account and a key.
type Stack struct {
	Sim, CP, DP, Bare *Proc
	// Key is the API key the data plane accepts.
	Key string
	// PostgresPID is the postmaster's process ID (0 when not found, e.g. an external server).
	PostgresPID int

	cfg        StackConfig
	pg         *pgtest.Cluster
	procs      []*Proc
	adminToken string
	nodeToken  string
	adminAddr  string // the control plane's admin listener
	client     *http.Client
}

// Start brings the stack up. On error everything started so far is stopped.
func Start(ctx context.Context, cfg StackConfig) (_ *Stack, err error) {
	if cfg.BinDir == "" || cfg.WorkDir == "" {
		return nil, errors.New("stack: BinDir and WorkDir are required")
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	for _, b := range []string{"simulator", "controlplane", "dataplane", "bareproxy"} {
		if _, err := os.Stat(filepath.Join(cfg.BinDir, b)); err != nil {
			return nil, fmt.Errorf("stack: binary %s: %w (build with make build first)", b, err)
		}
	}
	if err := os.MkdirAll(filepath.Join(cfg.WorkDir, "logs"), 0o755); err != nil {
		return nil, err
	}
	s := &Stack{cfg: cfg, adminToken: "adm_" + randHex(16), nodeToken: "node_" + randHex(16),
		client: &http.Client{Timeout: 30 * time.Second}}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	s.step("starting a throwaway Postgres cluster")
	pctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if s.pg, err = pgtest.Start(pctx); err != nil {
		return nil, fmt.Errorf("stack: postgres: %w", err)
	}
	s.PostgresPID = findChild(os.Getpid(), "postgres")
	dbURL, err := s.pg.CreateDatabase(pctx, "bench")
	if err != nil {
		return nil, fmt.Errorf("stack: create database: %w", err)
	}
	runtimeURL, err := s.pg.RuntimeURL(pctx, dbURL) // migrate as the owner, serve as the runtime role
	if err != nil {
		return nil, fmt.Errorf("stack: runtime role: %w", err)
	}

	privFile, pubFile, err := writeSigningKeys(cfg.WorkDir)
	if err != nil {
		return nil, err
	}
	addrs := make([]string, 5)
	for i := range addrs {
		if addrs[i], err = freeAddr(); err != nil {
			return nil, err
		}
	}
	// Latency knobs are zero: the benchmark measures the gateway, not sleeps. Flags given on
	// the command line win over any GATEWAY_SIM_* variable in the environment.
	s.step("starting simulator, control plane and bare proxy")
	if s.Sim, err = s.spawn("simulator", addrs[0], "--listen", addrs[0], "--name", "bench",
		"--latency-ms", "0", "--ttft-ms", "0", "--tokens-per-second", "0", "--error-rate", "0", "--status", "0"); err != nil {
		return nil, err
	}
	s.adminAddr = addrs[4]
	if s.CP, err = s.spawn("controlplane", addrs[1], "--listen", addrs[1], "--admin-listen", s.adminAddr, "--database-url", runtimeURL, "--migrate-database-url", dbURL,
		"--admin-token", s.adminToken, "--node-tokens", s.nodeToken, "--snapshot-signing-key-file", privFile, "--log-level", "warn"); err != nil {
		return nil, err
	}
	if s.Bare, err = s.spawn("bareproxy", addrs[2], "--listen", addrs[2], "--upstream", addrs[0]); err != nil {
		return nil, err
	}
	if err := s.waitHTTP(ctx, s.Sim, "GET", "/healthz", "", 200); err != nil {
		return nil, err
	}
	// Both listeners are bound before either serves: the node listener's answer means the
	// admin listener accepts too.
	if err := s.waitHTTP(ctx, s.CP, "GET", "/healthz", "", 200); err != nil {
		return nil, err
	}

	s.step("loading the benchmark catalogue, creating an account with credit and a key")
	if err := s.provision(ctx, addrs[0]); err != nil {
		return nil, err
	}

	s.step("starting the data plane")
	if s.DP, err = s.spawn("dataplane", addrs[3], "--listen", addrs[3], "--control-plane-url", s.CP.URL(),
		"--node-token", s.nodeToken, "--snapshot-public-key-file", pubFile, "--node-id", "bench-1", "--data-dir", filepath.Join(cfg.WorkDir, "node"),
		// One load generator on one address opens up to 10,000 streams: no connection caps.
		"--max-conns", "-1", "--max-conns-per-addr", "-1",
		"--log-level", "warn"); err != nil {
		return nil, err
	}
	if err := s.waitHTTP(ctx, s.DP, "GET", "/v1/models", "Bearer "+s.Key, 200); err != nil {
		return nil, err
	}
	for _, p := range []*Proc{s.Sim, s.Bare, s.DP} {
		if err := s.smoke(ctx, p); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *Stack) step(msg string) { fmt.Fprintf(s.cfg.Progress, "  stack: %s\n", msg) }

func (s *Stack) spawn(name, addr string, args ...string) (*Proc, error) {
	p, err := proc.Start(proc.Spec{Name: name, Bin: filepath.Join(s.cfg.BinDir, name), Addr: addr, Args: args,
		LogDir: filepath.Join(s.cfg.WorkDir, "logs")})
	if err != nil {
		return nil, err
	}
	s.procs = append(s.procs, p)
	return p, nil
}

// Close stops the processes (SIGTERM, then SIGKILL after 10 s) and Postgres.
func (s *Stack) Close() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		s.procs[i].Stop(10 * time.Second)
	}
	s.procs = nil
	if s.pg != nil {
		if err := s.pg.Stop(); err != nil {
			fmt.Fprintf(s.cfg.Progress, "  stack: stop postgres: %v\n", err)
		}
		s.pg = nil
	}
}

// Alive returns an error naming the first stack process that has exited.
func (s *Stack) Alive() error {
	for _, p := range s.procs {
		if p.Exited() {
			return fmt.Errorf("%s exited (%v); see its log", p.Name, p.Err())
		}
	}
	return nil
}

func (s *Stack) waitHTTP(ctx context.Context, p *Proc, method, path, auth string, want int) error {
	return proc.WaitHTTP(ctx, s.client, p, method, path, auth, want, 60*time.Second)
}

// admin calls the control plane's admin API and decodes the JSON answer into out.
func (s *Stack) admin(ctx context.Context, method, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+s.adminAddr+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, body)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			return fmt.Errorf("%s %s: decode %s: %w", method, path, body, err)
		}
	}
	return nil
}

// Catalog returns the benchmark catalogue: one chat model served by the simulator at
// simAddr, with room for the open-streams scenario's connections and slow streams.
func Catalog(simAddr string) map[string]any {
	return map[string]any{"models": []map[string]any{{
		"id": Model, "aliases": []string{}, "endpoint": "/v1/chat/completions", "created": 1735689600,
		"context_tokens": 131072, "tokenizer": "words",
		"input_ore_per_million_tokens": 1, "output_ore_per_million_tokens": 1,
		"routes": []map[string]any{{
			"id": "bench-sim", "provider": "simulator", "base_url": "http://" + simAddr + "/v1",
			"protocols": []string{"/v1/chat/completions"}, "translate": false,
			"region": "se-local", "country": "SE", "priority": 0, "weight": 1,
			"max_conns": 20000, "idle_timeout_ms": 120000, "total_timeout_ms": 900000,
		}},
	}}}
}

func (s *Stack) provision(ctx context.Context, simAddr string) error {
	if err := s.admin(ctx, "PUT", "/admin/v1/catalog", Catalog(simAddr), nil); err != nil {
		return fmt.Errorf("load catalogue: %w", err)
	}
	var acct struct {
		ID string `json:"id"`
	}
	if err := s.admin(ctx, "POST", "/admin/v1/accounts", map[string]any{"customer": "Bench AB", "residency": "se"}, &acct); err != nil {
		return err
	}
	// Prices are 1 öre per million tokens: a million SEK outlasts any run.
	if err := s.admin(ctx, "POST", "/admin/v1/accounts/"+acct.ID+"/credits",
		map[string]any{"amount_sek": "1000000.00", "note": "benchmark credit"}, nil); err != nil {
		return err
	}
	if err := s.admin(ctx, "POST", "/admin/v1/accounts/"+acct.ID+"/models", map[string]any{"models": []string{Model}}, nil); err != nil {
		return err
	}
	var key struct {
		Secret string `json:"secret"`
	}
	if err := s.admin(ctx, "POST", "/admin/v1/accounts/"+acct.ID+"/keys", map[string]any{"name": "bench"}, &key); err != nil {
		return err
	}
	if key.Secret == "" {
		return errors.New("create key: no secret in the answer")
	}
	s.Key = key.Secret
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

func freeAddr() (string, error) { return proc.FreeAddr() }

// writeSigningKeys writes a fresh snapshot signing key pair (PEM) into dir.
func writeSigningKeys(dir string) (priv, pub string, err error) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", "", err
	}
	pk, pubk, err := snapshot.MarshalKeyPair(key)
	if err != nil {
		return "", "", err
	}
	priv, pub = filepath.Join(dir, "snapshot-signing.pem"), filepath.Join(dir, "snapshot-signing.pub")
	if err := os.WriteFile(priv, pk, 0o600); err != nil {
		return "", "", err
	}
	return priv, pub, os.WriteFile(pub, pubk, 0o600)
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
