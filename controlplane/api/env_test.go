package api_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/api"
	"github.com/sekgate/gateway/controlplane/pgtest"
	"github.com/sekgate/gateway/controlplane/publish"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/controlplane/store/storetest"
	"github.com/sekgate/gateway/internal/poll"
	"github.com/sekgate/gateway/shared/internalapi"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const (
	adminToken = "admin-secret-0123456789abcdef0123456789"
	nodeToken  = "node-secret-0123456789abcdef0123456789"
)

// signingKey signs the test control plane's snapshots.
var signingKey = ed25519.NewKeyFromSeed([]byte("api-test-snapshot-signing-key-32"))

type env struct {
	t     *testing.T
	store *store.Store
	pub   *publish.Publisher
	srv   *httptest.Server // node-facing listener
	adm   *httptest.Server // admin listener
	// nodeInFlight counts requests inside the node API's handler, so a test can wait
	// for a long poll to be waiting instead of sleeping.
	nodeInFlight *atomic.Int64
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, nil)
}

// newEnvWith is newEnv with the API's config changed by opt.
func newEnvWith(t *testing.T, opt func(*api.Config)) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, _ := storetest.Open(t, store.Config{Logger: quiet(), MaxConns: 8})
	pub, err := publish.New(publish.Config{Store: st, Logger: quiet(), Debounce: 20 * time.Millisecond, Signer: signingKey})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { pub.Run(ctx); close(done) }()
	cfg := api.Config{Store: st, Snapshots: pub, AdminToken: adminToken, NodeTokens: []string{"other-node-token-0123456789abcdef", nodeToken},
		Logger: quiet(), MaxWait: 10 * time.Second}
	if opt != nil {
		opt(&cfg)
	}
	h, err := api.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	inFlight := new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inFlight.Add(1)
		defer inFlight.Add(-1)
		h.Node.ServeHTTP(w, r)
	}))
	adm := httptest.NewServer(h.Admin)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		adm.Close()
		cancel()
		<-done
		st.Close()
	})
	// Wait for the first snapshot.
	poll.Until(t, 10*time.Second, "a compiled snapshot", func() bool {
		cur, _ := pub.Current()
		return cur != nil
	})
	return &env{t: t, store: st, pub: pub, srv: srv, adm: adm, nodeInFlight: inFlight}
}

// waitNodeInFlight waits until n requests are inside the node API's handler: a long
// poll started in another goroutine has reached it and waits there.
func (e *env) waitNodeInFlight(n int64) {
	e.t.Helper()
	if !poll.Wait(10*time.Second, func() bool { return e.nodeInFlight.Load() >= n }) {
		e.t.Fatalf("%d node requests in flight, want %d", e.nodeInFlight.Load(), n)
	}
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// errInfo returns the envelope's type, code and param ("" for null).
func (r resp) errInfo(t *testing.T) (typ, code, param string) {
	t.Helper()
	var e struct {
		Error struct {
			Type    string  `json:"type"`
			Message string  `json:"message"`
			Code    *string `json:"code"`
			Param   *string `json:"param"`
		} `json:"error"`
	}
	r.json(t, &e)
	if e.Error.Type == "" || e.Error.Message == "" {
		t.Fatalf("not an error envelope: %s", r.body)
	}
	if e.Error.Code != nil {
		code = *e.Error.Code
	}
	if e.Error.Param != nil {
		param = *e.Error.Param
	}
	return e.Error.Type, code, param
}

func (e *env) do(method, path, token string, body any, hdr map[string]string) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	return e.doAt(e.urlFor(path), method, path, token, rd, hdr)
}

// urlFor picks the listener a path lives on: the admin API on the admin listener.
func (e *env) urlFor(path string) string {
	if strings.HasPrefix(path, "/admin/") {
		return e.adm.URL
	}
	return e.srv.URL
}

func (e *env) doAt(base, method, path, token string, rd io.Reader, hdr map[string]string) resp {
	e.t.Helper()
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.Header.Get(internalapi.HeaderRequestID) == "" {
		e.t.Errorf("%s %s: no X-Request-Id", method, path)
	}
	if res.StatusCode >= 400 && res.Header.Get("Content-Type") != "application/json" {
		e.t.Errorf("%s %s: error %d with Content-Type %q", method, path, res.StatusCode, res.Header.Get("Content-Type"))
	}
	if strings.HasPrefix(path, "/admin/") {
		checkAdminContract(e.t, method, path, res.StatusCode, res.Header, b)
	}
	return resp{res.StatusCode, res.Header, b}
}

func (e *env) admin(method, path string, body any) resp {
	e.t.Helper()
	return e.do(method, path, adminToken, body, nil)
}

// node calls an internal or forwarded path as a data-plane node; account may be empty.
func (e *env) node(method, path, account string) resp {
	e.t.Helper()
	h := map[string]string{internalapi.HeaderNodeID: "node-1"}
	if account != "" {
		h[internalapi.HeaderAccountID] = account
	}
	return e.do(method, path, nodeToken, nil, h)
}

func (e *env) mustStatus(r resp, want int) resp {
	e.t.Helper()
	if r.status != want {
		e.t.Fatalf("status %d, want %d: %s", r.status, want, r.body)
	}
	return r
}

// createAccount makes an account through the admin API and returns its ID.
func (e *env) createAccount(customer, res string) string {
	e.t.Helper()
	var a struct{ ID string }
	e.mustStatus(e.admin("POST", "/admin/v1/accounts", map[string]string{"customer": customer, "residency": res}), 201).json(e.t, &a)
	return a.ID
}

var testCatalog = map[string]any{"models": []any{
	map[string]any{
		"id": "llama-3.1-8b", "aliases": []string{"llama", "meta/llama"}, "endpoint": "/v1/chat/completions",
		"created": 1700000000, "context_tokens": 8192, "tokenizer": "llama3",
		"input_ore_per_million_tokens": 150, "output_ore_per_million_tokens": 300,
		"routes": []any{
			map[string]any{"id": "llama-se", "provider": "vllm", "base_url": "http://127.0.0.1:8090/v1", "upstream_model": "meta-llama/Llama-3.1-8B",
				"credentials_ref": "env:GATEWAY_CREDENTIAL_VLLM", "protocols": []string{"/v1/chat/completions", "/v1/completions"}, "translate": true,
				"region": "se-sto-1", "country": "SE", "priority": 0, "weight": 1},
		},
	},
	map[string]any{
		"id": "nomic-embed", "aliases": []string{}, "endpoint": "/v1/embeddings",
		"input_ore_per_million_tokens": 10, "output_ore_per_million_tokens": 0,
		"routes": []any{
			map[string]any{"id": "embed-de", "provider": "tei", "base_url": "http://127.0.0.1:8090/v1", "protocols": []string{"/v1/embeddings"},
				"region": "de-fra-1", "country": "DE", "priority": 0, "weight": 3},
		},
	},
}}
