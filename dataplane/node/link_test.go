package node

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sekgate/gateway/internal/poll"
	"github.com/sekgate/gateway/internal/tlsfiles"
	"github.com/sekgate/gateway/internal/tlsfiles/tlstest"
	"github.com/sekgate/gateway/shared/apikey"
	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

const testNodeToken = "node_0123456789abcdef0123456789abcdef"

func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// keyFiles writes a fresh snapshot key pair and returns the private key and public file.
func keyFiles(t *testing.T, dir string) (ed25519.PrivateKey, string) {
	t.Helper()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	_, pubPEM, err := snapshot.MarshalKeyPair(priv)
	if err != nil {
		t.Fatal(err)
	}
	return priv, writeFile(t, dir, "snapshot.pub", pubPEM)
}

func TestFlagsLinkChecks(t *testing.T) {
	dir := t.TempDir()
	_, pubFile := keyFiles(t, dir)
	tokenFile := writeFile(t, dir, "token", []byte(testNodeToken+"\n"))
	base := []string{"--snapshot-public-key-file", pubFile}
	o, err := parseFlags(append(base, "--node-token-file", tokenFile))
	if err != nil {
		t.Fatal(err)
	}
	if o.NodeToken.Reveal() != testNodeToken || o.Link.MaxAge != 24*time.Hour {
		t.Fatalf("options %+v", o)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"plain http on a non-loopback address", []string{"--node-token", testNodeToken, "--control-plane-url", "http://10.1.2.3:8081"}, "non-loopback"},
		{"plain http on a host name", []string{"--node-token", testNodeToken, "--control-plane-url", "http://cp.internal:8081"}, "non-loopback"},
		{"short token", []string{"--node-token", "node-short"}, "at least 32 bytes"},
		{"short token file", []string{"--node-token-file", writeFile(t, dir, "short", []byte("abc"))}, "at least 32 bytes"},
		{"token and file", []string{"--node-token", testNodeToken, "--node-token-file", tokenFile}, "not both"},
		{"no token", nil, "node-token"},
		{"cert without key", []string{"--node-token", testNodeToken, "--tls-client-cert-file", "c.pem"}, "go together"},
	} {
		_, err := parseFlags(append(append([]string{}, base...), tc.args...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := parseFlags([]string{"--node-token", testNodeToken}); err == nil || !strings.Contains(err.Error(), "snapshot-public-key-file") {
		t.Errorf("no public key: %v", err)
	}
	for _, args := range [][]string{
		{"--node-token", testNodeToken, "--control-plane-url", "http://10.1.2.3:8081", "--insecure-control-plane"},
		{"--node-token", testNodeToken, "--control-plane-url", "https://cp.internal:8081"},
		{"--node-token", testNodeToken, "--control-plane-url", "http://localhost:8081"},
	} {
		if _, err := parseFlags(append(append([]string{}, base...), args...)); err != nil {
			t.Errorf("%v refused: %v", args, err)
		}
	}
	if _, err := parseFlags([]string{"--node-token", testNodeToken, "--insecure-unsigned-snapshots"}); err != nil {
		t.Errorf("insecure unsigned refused: %v", err)
	}
}

// fakeCP is a control plane over mTLS: a signed snapshot holding one key, an empty balance
// watch, usage acknowledgements, and GET /v1/service/account answered with the forwarded
// identity.
type fakeCP struct {
	snap      []byte
	forwarded atomic.Int32
}

func (f *fakeCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+testNodeToken {
		w.WriteHeader(401)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case internalapi.PathSnapshot:
		if r.URL.Query().Get("have") != "0" {
			select {
			case <-r.Context().Done():
			case <-time.After(time.Second):
			}
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Write(f.snap)
	case internalapi.PathBalances:
		// The control plane long-polls balances: answer after a while, or not at all
		// once the node has gone.
		select {
		case <-r.Context().Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		json.NewEncoder(w).Encode(usage.BalanceUpdate{Seq: 1, Balances: []snapshot.Balance{}})
	case internalapi.PathUsage:
		var b usage.Batch
		json.NewDecoder(r.Body).Decode(&b)
		json.NewEncoder(w).Encode(usage.Reply{BatchID: b.BatchID, Balances: []snapshot.Balance{}})
	case "/v1/service/account":
		f.forwarded.Add(1)
		json.NewEncoder(w).Encode(map[string]string{"account": r.Header.Get(internalapi.HeaderAccountID)})
	default:
		w.WriteHeader(404)
	}
}

// The data plane binary's one TLS configuration, end to end: snapshot sync and forwarded
// paths reach an mTLS control plane; the snapshot is verified with the public key.
func TestDataPlaneOverMutualTLS(t *testing.T) {
	dir := t.TempDir()
	priv, pubFile := keyFiles(t, dir)
	ca := tlstest.NewCA(t, dir, "ca")
	cpCert, cpKey, _ := ca.Issue(t, dir, "cp")
	nodeCert, nodeKey, _ := ca.Issue(t, dir, "node")

	keyID, secret, keyHash, err := apikey.New()
	if err != nil {
		t.Fatal(err)
	}
	s := &snapshot.Snapshot{Version: 1, GeneratedAt: time.Now().UTC(), IssuedAt: time.Now().UTC(), Content: snapshot.Content{
		Accounts: []snapshot.Account{{ID: "acct_00000000000000a1", Customer: "A", Residency: "se", Models: []string{"m"}}},
		Keys:     []snapshot.Key{{ID: keyID, AccountID: "acct_00000000000000a1", Hash: keyHash}},
		Models:   []snapshot.Model{{ID: "m", Aliases: []string{}, Endpoint: snapshot.EndpointChat}},
		Routes: []snapshot.Route{{ID: "r", Model: "m", Provider: "p", BaseURL: "http://127.0.0.1:9/v1", Protocols: []string{snapshot.EndpointChat},
			Region: "se-1", Country: "SE", Weight: 1}},
		Balances: []snapshot.Balance{},
	}}
	s.Hash, _ = snapshot.ComputeHash(&s.Content)
	s.Sign(priv)
	b, _ := json.Marshal(s)
	cp := &fakeCP{snap: b}
	stls, err := tlsfiles.ServerConfig(cpCert, cpKey, ca.File, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(cp)
	srv.TLS = stls
	srv.StartTLS()
	defer srv.Close()

	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	o, err := parseFlags([]string{"--listen", addr, "--control-plane-url", "https://" + srv.Listener.Addr().String(),
		"--node-token", testNodeToken, "--node-id", "tls-1", "--data-dir", filepath.Join(dir, "node"),
		"--snapshot-public-key-file", pubFile, "--control-plane-ca-file", ca.File,
		"--tls-client-cert-file", nodeCert, "--tls-client-key-file", nodeKey, "--snapshot-wait", "1s"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- run(ctx, o, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	defer func() { cancel(); <-ran }()

	get := func(path string) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, ""
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if !poll.Wait(20*time.Second, func() bool { st, _ := get("/v1/models"); return st == 200 }) {
		st, body := get("/v1/models")
		t.Fatalf("node did not apply the snapshot over mTLS: %d %s", st, body)
	}
	st, body := get("/v1/service/account")
	if st != 200 || !strings.Contains(body, "acct_00000000000000a1") || cp.forwarded.Load() != 1 {
		t.Fatalf("forwarded path over mTLS: %d %s", st, body)
	}
}
