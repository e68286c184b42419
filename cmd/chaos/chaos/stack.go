package chaos

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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sekgate/gateway/cmd/internal/proc"
	"github.com/sekgate/gateway/controlplane/pgtest"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Models of the chaos catalogue and their prices (öre per million tokens).
const (
	ModelGood    = "chaos-chat"    // served by a well-behaved simulator
	ModelHostile = "chaos-hostile" // served by a simulator told to misbehave per request
	InOre        = 2000
	OutOre       = 6000
)

// account is a customer account of the run with its API key.
type account struct {
	ID, Key string
}

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
	accounts []account
	admin    string
	adminURL string // the control plane's admin listener
	client   *http.Client
	procs    []*proc.Proc
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

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *stack) step(format string, args ...any) {
	fmt.Fprintf(s.cfg.Progress, "  chaos: "+format+"\n", args...)
}

func (s *stack) spawn(name, bin string, args ...string) (*proc.Proc, error) {
	addr := ""
	for i, a := range args {
		if a == "--listen" && i+1 < len(args) {
			addr = args[i+1]
		}
	}
	p, err := proc.Start(proc.Spec{Name: name, Bin: filepath.Join(s.cfg.BinDir, bin), Addr: addr, Args: args,
		LogDir: filepath.Join(s.cfg.WorkDir, "logs")})
	if err != nil {
		return nil, err
	}
	s.procs = append(s.procs, p)
	return p, nil
}

// startStack brings everything up; on error it stops what it started.
func startStack(ctx context.Context, cfg Config) (_ *stack, err error) {
	for _, b := range []string{"simulator", "controlplane", "dataplane"} {
		if _, err := os.Stat(filepath.Join(cfg.BinDir, b)); err != nil {
			return nil, fmt.Errorf("binary %s: %w (build with make build first)", b, err)
		}
	}
	if err := os.MkdirAll(filepath.Join(cfg.WorkDir, "logs"), 0o755); err != nil {
		return nil, err
	}
	s := &stack{cfg: cfg, admin: "adm_" + randHex(16), client: &http.Client{Timeout: 60 * time.Second}}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	s.step("starting a throwaway Postgres cluster")
	pctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if s.pg, err = pgtest.Start(pctx); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if s.dbURL, err = s.pg.CreateDatabase(pctx, "chaos"); err != nil {
		return nil, err
	}
	runtimeURL, err := s.pg.RuntimeURL(pctx, s.dbURL) // migrate as the owner, serve as the runtime role
	if err != nil {
		return nil, fmt.Errorf("runtime role: %w", err)
	}
	addr := func() string {
		a, e := proc.FreeAddr()
		if e != nil && err == nil {
			err = e
		}
		return a
	}
	goodAddr, hostileAddr, cpAddr, adminAddr := addr(), addr(), addr(), addr()
	if err != nil {
		return nil, err
	}
	s.adminURL = "http://" + adminAddr
	nodeToken := "node_" + randHex(16)
	keyFile, pubFile, err := writeSigningKeys(cfg.WorkDir)
	if err != nil {
		return nil, err
	}
	s.step("starting simulators and the control plane")
	// Knobs are given on the command line so no GATEWAY_SIM_* setting leaks in.
	simArgs := []string{"--latency-ms", "0", "--ttft-ms", "0", "--tokens-per-second", "0", "--error-rate", "0", "--status", "0"}
	if s.good, err = s.spawn("sim-good", "simulator", append([]string{"--listen", goodAddr, "--name", "good"}, simArgs...)...); err != nil {
		return nil, err
	}
	if s.hostile, err = s.spawn("sim-hostile", "simulator", append([]string{"--listen", hostileAddr, "--name", "hostile"}, simArgs...)...); err != nil {
		return nil, err
	}
	if s.cp, err = s.spawn("controlplane", "controlplane", "--listen", cpAddr, "--admin-listen", adminAddr, "--database-url", runtimeURL, "--migrate-database-url", s.dbURL,
		"--admin-token", s.admin, "--node-tokens", nodeToken, "--snapshot-signing-key-file", keyFile, "--log-level", "warn"); err != nil {
		return nil, err
	}
	for _, p := range []*proc.Proc{s.good, s.hostile} {
		if err := proc.WaitHTTP(ctx, s.client, p, "GET", "/healthz", "", 200, 60*time.Second); err != nil {
			return nil, err
		}
	}
	if err := s.waitCP(ctx); err != nil {
		return nil, err
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
		p, err := s.spawn(name, "dataplane", "--listen", dpAddr, "--control-plane-url", s.cp.URL(),
			"--node-token", nodeToken, "--snapshot-public-key-file", pubFile, "--node-id", fmt.Sprintf("chaos-%d", i+1),
			"--data-dir", filepath.Join(cfg.WorkDir, name), "--ops-listen", opsAddr,
			"--usage-batch-interval", "50ms", "--snapshot-wait", "5s", "--log-level", "warn")
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
	if err := proc.WaitHTTP(ctx, s.client, s.cp, "GET", "/healthz", "", 200, 60*time.Second); err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, "GET", s.adminURL+"/admin/v1/snapshot", nil)
		req.Header.Set("Authorization", "Bearer "+s.admin)
		resp, err := s.client.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("control plane admin API did not answer 200 within 60 s (last: %s)", last)
}

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
	for i := len(s.procs) - 1; i >= 0; i-- {
		if !s.procs[i].Exited() {
			s.procs[i].Stop(10 * time.Second)
		}
	}
	if s.pg != nil {
		if err := s.pg.Stop(); err != nil {
			s.step("stop postgres: %v", err)
		}
	}
}

// adminCall calls the control plane's admin API and decodes the answer into out.
func (s *stack) adminCall(ctx context.Context, method, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, s.adminURL+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.admin)
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

func catalog(goodAddr, hostileAddr string) map[string]any {
	model := func(id, addr string) map[string]any {
		return map[string]any{
			"id": id, "aliases": []string{}, "endpoint": "/v1/chat/completions", "created": 1735689600,
			"context_tokens": 32768, "tokenizer": "words",
			"input_ore_per_million_tokens": InOre, "output_ore_per_million_tokens": OutOre,
			"routes": []map[string]any{{
				"id": id + "-route", "provider": "simulator", "base_url": "http://" + addr + "/v1",
				"protocols": []string{"/v1/chat/completions"}, "region": "se-local", "country": "SE",
				"priority": 0, "weight": 1, "idle_timeout_ms": 10000, "total_timeout_ms": 60000,
			}},
		}
	}
	return map[string]any{"models": []map[string]any{model(ModelGood, goodAddr), model(ModelHostile, hostileAddr)}}
}

func (s *stack) provision(ctx context.Context, goodAddr, hostileAddr string) error {
	if err := s.adminCall(ctx, "PUT", "/admin/v1/catalog", catalog(goodAddr, hostileAddr), nil); err != nil {
		return fmt.Errorf("load catalogue: %w", err)
	}
	for i := range s.cfg.Accounts {
		var acct struct {
			ID string `json:"id"`
		}
		if err := s.adminCall(ctx, "POST", "/admin/v1/accounts", map[string]any{"customer": "Chaos " + strconv.Itoa(i+1) + " AB", "residency": "se"}, &acct); err != nil {
			return err
		}
		if err := s.adminCall(ctx, "POST", "/admin/v1/accounts/"+acct.ID+"/credits",
			map[string]any{"amount_sek": "100000.00", "note": "chaos credit"}, nil); err != nil {
			return err
		}
		if err := s.adminCall(ctx, "POST", "/admin/v1/accounts/"+acct.ID+"/models", map[string]any{"models": []string{ModelGood, ModelHostile}}, nil); err != nil {
			return err
		}
		var key struct {
			Secret string `json:"secret"`
		}
		if err := s.adminCall(ctx, "POST", "/admin/v1/accounts/"+acct.ID+"/keys", map[string]any{"name": "chaos"}, &key); err != nil {
			return err
		}
		if key.Secret == "" {
			return errors.New("create key: no secret in the answer")
		}
		s.accounts = append(s.accounts, account{ID: acct.ID, Key: key.Secret})
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
