// Package conformance drives a running gateway — the real dataplane, controlplane and
// simulator binaries on a throwaway Postgres cluster — through raw HTTP and the official
// SDKs. Each test is named after the section of the interface it proves (see COVERAGE.md),
// and every response any test receives is validated against the OpenAPI document
// (contract_test.go).
package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/pgtest"
	"github.com/sekgate/gateway/deploy/tools/harness"
	"github.com/sekgate/gateway/deploy/tools/proc"
	"github.com/sekgate/gateway/internal/poll"
)

func TestMain(m *testing.M) {
	// The tests mostly wait on the stack: run more of them at once than there are cores,
	// unless -parallel was given.
	flag.Parse()
	if f := flag.Lookup("test.parallel"); f != nil && f.Value.String() == f.DefValue {
		_ = f.Value.Set("6")
	}
	code := m.Run()
	reportObserved()
	if stack != nil {
		stack.Stop()
		if code == 0 {
			_ = os.RemoveAll(stack.dir)
		} else {
			fmt.Fprintln(os.Stderr, "conformance: process logs kept in", stack.dir)
		}
	}
	if cluster != nil {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	os.Exit(code)
}

// Stack is one running gateway deployment.
type Stack struct {
	DataURL     string // public {base_url}
	AdminURL    string // the control plane's admin listener
	CPURL       string // the control plane's node-facing listener
	SimURL      string // the simulator behind most routes
	BrokenURL   string // a second simulator whose streams break after two events
	PayURL      string // fake payment provider
	DatabaseURL string // the schema owner's (tests reach behind the API with it)
	AdminToken  string
	NodeToken   string
	WebhookKey  string // payment webhook signing secret
	SigningKey  string // file of the control plane's snapshot signing key
	PublicKey   string // file of its public key, given to nodes
	DocsURL     string // the configured public reference
	ConfirmURL  string // signup confirmation page
	ErrorURL    string // signup error page
	dir         string
	procs       []*exec.Cmd
	pay         *httptest.Server
	paySessions atomic.Int64
}

var (
	stackOnce sync.Once
	stack     *Stack
	stackErr  error
	binDir    string
	cluster   *pgtest.Cluster
)

// getStack starts the deployment on first use. Under -short it skips the test: the
// deployment is binaries, a PostgreSQL cluster and more processes.
func getStack(t testing.TB) *Stack {
	t.Helper()
	if testing.Short() {
		t.Skip("starts the deployment's processes; skipped with -short")
	}
	stackOnce.Do(func() { stack, stackErr = startStack() })
	if stackErr != nil {
		t.Fatalf("start gateway stack: %v", stackErr)
	}
	return stack
}

func repoRoot() (string, error) { return proc.RepoRoot(context.Background()) }

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr() (string, error) { return proc.FreeAddr() }

func startStack() (_ *Stack, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "gateway-conformance-")
	if err != nil {
		return nil, err
	}
	// CONFORMANCE_BIN_DIR names prebuilt binaries (dataplane, controlplane, simulator,
	// gatewayctl);
	// without it they are built from this module.
	binDir = os.Getenv("CONFORMANCE_BIN_DIR")
	if binDir == "" {
		binDir = filepath.Join(dir, "bin")
		if err := proc.Build(ctx, binDir, "./cmd/dataplane", "./cmd/controlplane", "./deploy/cmd/simulator", "./cmd/gatewayctl"); err != nil {
			return nil, err
		}
	}
	cluster, err = pgtest.Shared()
	if err != nil {
		return nil, err
	}
	// The control plane migrates as the schema owner and serves as the runtime role.
	dbURL, runtimeURL, err := harness.Database(ctx, cluster, "conformance")
	if err != nil {
		return nil, err
	}
	s := &Stack{AdminToken: "adm_conformance_0123456789abcdef0123456789", NodeToken: "node_conformance_0123456789abcdef0123456789", WebhookKey: "whsec_conformance",
		DatabaseURL: dbURL, dir: dir,
		DocsURL: "https://reference.invalid/gateway", ConfirmURL: "https://site.invalid/thanks", ErrorURL: "https://site.invalid/signup-error"}
	defer func() {
		if err != nil {
			s.Stop()
			err = fmt.Errorf("%w (logs in %s)", err, dir)
		}
	}()
	if s.SigningKey, s.PublicKey, err = harness.WriteSigningKeys(dir); err != nil {
		return nil, err
	}
	s.pay = httptest.NewServer(http.HandlerFunc(s.fakePayments))
	s.PayURL = s.pay.URL
	simAddr, _ := freeAddr()
	brokenAddr, _ := freeAddr()
	cpAddr, _ := freeAddr()
	adminAddr, _ := freeAddr()
	dpAddr, _ := freeAddr()
	deadAddr, _ := freeAddr() // nothing listens here: connections are refused
	testBoxAddr, _ := freeAddr()
	const testBoxToken = "testbox_conformance_0123456789abcdef"
	s.SimURL, s.BrokenURL, s.CPURL, s.AdminURL, s.DataURL = "http://"+simAddr, "http://"+brokenAddr, "http://"+cpAddr, "http://"+adminAddr, "http://"+dpAddr

	if err := s.spawn("simulator", "simulator", nil, harness.SimulatorArgs(simAddr, "sim")...); err != nil {
		return nil, err
	}
	if err := s.spawn("simulator", "simulator-broken", nil, harness.SimulatorArgs(brokenAddr, "sim-broken", "--fail-after-events", "2")...); err != nil {
		return nil, err
	}
	// Database URLs and tokens go through the environment: the conformance stack proves
	// that path of the configuration.
	if err := s.spawn("controlplane", "controlplane", []string{"GATEWAY_DATABASE_URL=" + runtimeURL, "GATEWAY_MIGRATE_DATABASE_URL=" + dbURL, "GATEWAY_ADMIN_TOKEN=" + s.AdminToken, "GATEWAY_NODE_TOKENS=" + s.NodeToken},
		harness.ControlPlane{Listen: cpAddr, AdminListen: adminAddr, SigningKeyFile: s.SigningKey}.Args(
			"--signup-confirm-url", s.ConfirmURL, "--signup-error-url", s.ErrorURL, "--signup-rate-per-minute", "1000",
			"--stripe-secret-key", "sk_test_conformance", "--stripe-api-base", s.PayURL,
			"--stripe-webhook-secret", s.WebhookKey,
			"--topup-success-url", "https://site.invalid/paid", "--topup-cancel-url", "https://site.invalid/cancelled",
			"--test-box-url", "http://"+testBoxAddr, "--test-box-token", testBoxToken)...); err != nil {
		return nil, err
	}
	if err := s.spawn("dataplane", "dataplane", []string{"GATEWAY_NODE_TOKEN=" + s.NodeToken},
		harness.DataPlane{Listen: dpAddr, ControlPlaneURL: s.CPURL, PublicKeyFile: s.PublicKey, NodeID: "conformance-1",
			DataDir: filepath.Join(dir, "node")}.Args("--docs-url", s.DocsURL, "--snapshot-wait", "10s", "--usage-batch-interval", "50ms",
			"--test-box-listen", testBoxAddr, "--test-box-token", testBoxToken)...); err != nil {
		return nil, err
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	for _, u := range []string{s.SimURL + "/healthz", s.BrokenURL + "/healthz", s.AdminURL + "/admin/v1/snapshot", s.DataURL + "/healthz"} {
		if err := s.waitHTTP(wctx, u); err != nil {
			return nil, err
		}
	}
	cat := demoCatalog(s.SimURL+"/v1", s.BrokenURL+"/v1", "http://"+deadAddr+"/v1")
	if r, err := s.admin("PUT", "/admin/v1/catalog", cat); err != nil || r.Status != 200 {
		return nil, fmt.Errorf("load catalogue: %v %d %s", err, r.Status, r.Body)
	}
	return s, nil
}

// Models of the conformance catalogue.
const (
	modelChat       = "llama-3.1-8b-instruct" // chat, completions, responses, messages natively (SE)
	aliasChat       = "llama8b"
	slashAliasChat  = "meta/llama-8b"
	modelTranslated = "qwen-2.5-7b-instruct" // chat only; Messages and Responses through translation (SE)
	modelEmbed      = "nomic-embed-text-v1.5"
	modelSystemOne  = "systemone-1"
	modelEU         = "mistral-eu" // route in Germany
	modelUS         = "llama-us"   // route in the United States
	modelFailover   = "failover-chat"
	modelBroken     = "broken-stream-chat" // first route's streams break; a healthy second route
	modelSlow       = "slow-chat"          // first-byte timeout 300 ms, total 1 s
	modelDead       = "dead-chat"          // only route refuses connections
	// modelReasoning is a vLLM reasoning model (the simulator's vLLM dialect; a prompt with
	// "scenario:reasoning" gets reasoning, then text): chat only, Messages and Responses
	// through translation (SE).
	modelReasoning = "qwen3-8b-reasoning"
)

// Prices of the chat model (öre per million tokens).
const chatInOre, chatOutOre = 2000, 6000

func demoCatalog(sim, broken, dead string) map[string]any {
	route := func(id, provider, base, region, country string, prio int, protocols ...string) map[string]any {
		return map[string]any{"id": id, "provider": provider, "base_url": base, "protocols": protocols,
			"region": region, "country": country, "priority": prio, "weight": 1}
	}
	chat := "/v1/chat/completions"
	model := func(id, endpoint string, in, out int, aliases []string, routes ...map[string]any) map[string]any {
		if aliases == nil {
			aliases = []string{}
		}
		return map[string]any{"id": id, "aliases": aliases, "endpoint": endpoint, "created": 1721347200,
			"context_tokens": 8192, "tokenizer": "llama3", "input_ore_per_million_tokens": in,
			"output_ore_per_million_tokens": out, "routes": routes}
	}
	translated := route("tr-se", "sim-se", sim, "se-sto-1", "SE", 0, chat)
	translated["translate"] = true
	reasoning := route("reason-se", "sim-se", strings.TrimSuffix(sim, "/v1")+"/vllm/v1", "se-sto-1", "SE", 0, chat)
	reasoning["translate"], reasoning["server"] = true, "vllm"
	slow := route("slow-se", "sim-se", sim, "se-sto-1", "SE", 0, chat)
	slow["first_byte_timeout_ms"] = 300 // streams: wait for the answer's headers
	slow["total_timeout_ms"] = 1000     // non-streaming answers arrive whole: total bounds them
	return map[string]any{"models": []any{
		model(modelChat, chat, chatInOre, chatOutOre, []string{aliasChat, slashAliasChat},
			route("chat-se", "sim-se", sim, "se-sto-1", "SE", 0, chat, "/v1/completions", "/v1/responses", "/v1/messages")),
		model(modelTranslated, chat, 1500, 4500, nil, translated),
		model(modelEmbed, "/v1/embeddings", 100, 0, nil, route("embed-se", "sim-se", sim, "se-sto-1", "SE", 0, "/v1/embeddings")),
		model(modelSystemOne, "/v1/systemone", 5000, 5000, nil, route("s1-se", "sim-se", sim, "se-sto-1", "SE", 0, "/v1/systemone")),
		model(modelEU, chat, 2000, 6000, nil, route("chat-de", "sim-de", sim, "de-fra-1", "DE", 0, chat)),
		model(modelUS, chat, 2000, 6000, nil, route("chat-us", "sim-us", sim, "us-east-1", "US", 0, chat)),
		model(modelFailover, chat, 2000, 6000, nil,
			route("fo-dead", "dead-se", dead, "se-sto-2", "SE", 0, chat),
			route("fo-live", "sim-se", sim, "se-sto-1", "SE", 1, chat)),
		model(modelBroken, chat, 2000, 6000, nil,
			route("bs-broken", "sim-broken", broken, "se-sto-3", "SE", 0, chat),
			route("bs-live", "sim-se", sim, "se-sto-1", "SE", 1, chat)),
		model(modelSlow, chat, 2000, 6000, nil, slow),
		model(modelDead, chat, 2000, 6000, nil, route("dead-se", "dead-se", dead, "se-sto-2", "SE", 0, chat)),
		model(modelReasoning, chat, 1500, 4500, nil, reasoning),
	}}
}

func (s *Stack) spawn(bin, name string, env []string, args ...string) error {
	cmd := exec.Command(filepath.Join(binDir, bin), args...)
	cmd.Env = append(os.Environ(), env...)
	logf, err := os.Create(filepath.Join(s.dir, name+".log"))
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	s.procs = append(s.procs, cmd)
	return nil
}

// Stop ends every process of the stack.
func (s *Stack) Stop() {
	for _, p := range s.procs {
		_ = p.Process.Signal(os.Interrupt)
	}
	for _, p := range s.procs {
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = p.Process.Kill()
		}
	}
	if s.pay != nil {
		s.pay.Close()
	}
}

// waitHTTP waits until url answers 200 (the admin token is sent along), failing early when
// a process of the stack has exited.
func (s *Stack) waitHTTP(ctx context.Context, url string) error {
	return proc.WaitURL(ctx, http.DefaultClient, "GET", url, "Bearer "+s.AdminToken, 200, time.Hour, func() error {
		for _, p := range s.procs {
			if p.ProcessState != nil || p.Process.Signal(syscall.Signal(0)) != nil {
				return fmt.Errorf("%s exited", p.Path)
			}
		}
		return nil
	})
}

// fakePayments is the payment provider's checkout-session API as far as the top-up needs it.
func (s *Stack) fakePayments(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/checkout/sessions" {
		w.WriteHeader(404)
		io.WriteString(w, `{"error":{"type":"invalid_request_error","message":"unknown path"}}`)
		return
	}
	_ = r.ParseForm()
	n := s.paySessions.Add(1)
	id := fmt.Sprintf("cs_test_conformance_%d", n)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": id, "object": "checkout.session", "mode": "payment", "currency": "sek",
		"client_reference_id": r.Form.Get("client_reference_id"), "payment_status": "unpaid", "status": "open",
		"url": "https://checkout.invalid/pay/" + id,
	})
}

// admin calls the admin API.
func (s *Stack) admin(method, path string, body any) (Response, error) {
	r, err := harness.Admin{URL: s.AdminURL, Token: s.AdminToken}.Do(context.Background(), method, path, body)
	return Response(r), err
}

// Admin calls the admin API and fails the test unless the status is 2xx.
func (s *Stack) Admin(t testing.TB, method, path string, body any) map[string]any {
	t.Helper()
	r, err := s.admin(method, path, body)
	if err != nil {
		t.Fatalf("admin %s %s: %v", method, path, err)
	}
	if r.Status/100 != 2 {
		t.Fatalf("admin %s %s: %d %s", method, path, r.Status, r.Body)
	}
	if len(r.Body) == 0 {
		return nil
	}
	return r.JSON(t)
}

// Account is a customer account made for one test, with one key.
type Account struct {
	ID    string
	Key   string
	KeyID string
}

// NewAccount creates an account with the given residency and credit (whole SEK), enables
// the given models (all catalogue models when none are named) and creates a key. It waits
// until the data plane accepts the key and knows the balance.
func (s *Stack) NewAccount(t testing.TB, residency string, creditSEK int, models ...string) Account {
	t.Helper()
	acct := s.Admin(t, "POST", "/admin/v1/accounts", map[string]any{"customer": t.Name(), "residency": residency})
	id, _ := acct["id"].(string)
	if id == "" {
		t.Fatalf("accounts create: %v", acct)
	}
	if creditSEK != 0 {
		s.Admin(t, "POST", "/admin/v1/accounts/"+id+"/credits", map[string]any{"amount_sek": fmt.Sprintf("%d.00", creditSEK), "note": "conformance"})
	}
	if models == nil {
		models = s.catalogModels(t)
	}
	if len(models) > 0 {
		s.Admin(t, "POST", "/admin/v1/accounts/"+id+"/models", map[string]any{"models": models, "allow_outside_residency": true}) // the suite tests the data plane's own refusal
	}
	a := s.NewKey(t, id, nil)
	if creditSEK > 0 {
		s.waitSpendable(t, a)
	}
	return a
}

// NewKey creates a key for an existing account (expiresInDays nil: no expiry) and waits
// until the data plane accepts it.
func (s *Stack) NewKey(t testing.TB, accountID string, expiresInDays any) Account {
	t.Helper()
	body := map[string]any{"name": "conformance"}
	if expiresInDays != nil {
		body["expires_in_days"] = expiresInDays
	}
	key := s.Admin(t, "POST", "/admin/v1/accounts/"+accountID+"/keys", body)
	a := Account{ID: accountID}
	a.Key, _ = key["secret"].(string)
	a.KeyID, _ = key["id"].(string)
	if a.Key == "" || a.KeyID == "" {
		t.Fatalf("keys create: %v", key)
	}
	s.waitFor(t, "key accepted", func() bool { return s.Do(t, "GET", "/v1/models", a.Key, nil, nil).Status == 200 })
	return a
}

// waitSpendable waits until the node admits inference for the account (its balance
// arrived): count_tokens answers 402 while the balance is unknown or not positive.
func (s *Stack) waitSpendable(t testing.TB, a Account) {
	t.Helper()
	s.waitFor(t, "balance known to the node", func() bool {
		r := s.Do(t, "POST", "/v1/messages/count_tokens", a.Key, nil, []byte(`{"model":"`+modelChat+`","messages":[{"role":"user","content":"x"}]}`))
		return r.Status != 402
	})
}

// waitFor polls cond for up to 10 s.
func (s *Stack) waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 10*time.Second, what, cond)
}

var (
	catalogOnce sync.Once
	catalogIDs  []string
)

func (s *Stack) catalogModels(t testing.TB) []string {
	t.Helper()
	catalogOnce.Do(func() {
		list := s.Admin(t, "GET", "/admin/v1/models", nil)
		for _, m := range list["data"].([]any) {
			catalogIDs = append(catalogIDs, m.(map[string]any)["id"].(string))
		}
	})
	if len(catalogIDs) == 0 {
		t.Fatal("catalogue has no models")
	}
	return catalogIDs
}

// Response is a fully read HTTP response.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a map.
func (r Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatalf("body is not a JSON object: %v: %q", err, r.Body)
	}
	return v
}

// Do sends one request to the data plane; the response is validated against the OpenAPI
// document (a mismatch fails t). key may be empty; body may be nil. header may set
// Content-Type and any other header.
func (s *Stack) Do(t testing.TB, method, path, key string, header map[string]string, body []byte) Response {
	t.Helper()
	req, err := http.NewRequest(method, s.DataURL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == nil {
		req.Body, req.ContentLength = nil, 0
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := checkedClient(t).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// Post sends a JSON body built from v.
func (s *Stack) Post(t testing.TB, path, key string, v any) Response {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return s.Do(t, "POST", path, key, nil, b)
}
