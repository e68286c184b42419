package plane

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/internal/poll"
	"github.com/sekgate/gateway/internal/tlsfiles"
	"github.com/sekgate/gateway/internal/tlsfiles/tlstest"
	"github.com/sekgate/gateway/shared/snapshot"
)

func TestTokenFilesAndMinimumLength(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	adminFile := write("admin", testAdminToken+"\n")
	nodesFile := write("nodes", "# one per line\n"+testNodeToken+"\n\n"+testNodeToken+"-b\n")
	base := []string{"--database-url", "postgres://x/db", "--snapshot-signing-key-file", "k.pem"}
	c, err := parseFlags(append(base, "--admin-token-file", adminFile, "--node-tokens-file", nodesFile))
	if err != nil {
		t.Fatal(err)
	}
	if c.AdminToken.Reveal() != testAdminToken || c.NodeTokens.Reveal() != testNodeToken+","+testNodeToken+"-b" {
		t.Fatalf("tokens %q %q", c.AdminToken.Reveal(), c.NodeTokens.Reveal())
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"short admin token", []string{"--admin-token", "short", "--node-tokens", testNodeToken}, "at least 32 bytes"},
		{"short admin token file", []string{"--admin-token-file", write("short", "abc\n"), "--node-tokens", testNodeToken}, "at least 32 bytes"},
		{"one short node token", []string{"--admin-token", testAdminToken, "--node-tokens", testNodeToken + ",tiny"}, "node token must be at least 32"},
		{"token and file", []string{"--admin-token", testAdminToken, "--admin-token-file", adminFile, "--node-tokens", testNodeToken}, "not both"},
		{"two admin lines", []string{"--admin-token-file", write("two", testAdminToken+"\n"+testAdminToken+"\n"), "--node-tokens", testNodeToken}, "white space"},
		{"missing file", []string{"--admin-token-file", filepath.Join(dir, "none"), "--node-tokens", testNodeToken}, "no such file"},
		{"no node tokens", []string{"--admin-token", testAdminToken}, "node-tokens"},
	} {
		_, err := parseFlags(append(append([]string{}, base...), tc.args...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := parseFlags([]string{"--database-url", "postgres://x/db", "--admin-token", testAdminToken, "--node-tokens", testNodeToken}); err == nil ||
		!strings.Contains(err.Error(), "snapshot-signing-key-file") {
		t.Errorf("no signing key: %v", err)
	}
	if _, err := parseFlags(append(base, "--admin-token", testAdminToken, "--node-tokens", testNodeToken, "--tls-cert-file", "c.pem")); err == nil {
		t.Error("certificate without key accepted")
	}
}

// The node-facing listener with TLS and client certificates, end to end: a node with the
// CA and its certificate gets a snapshot signed by the control plane's key; a node without
// a client certificate is refused.
func TestNodeListenerTLSAndMutualTLS(t *testing.T) {
	cfg, pub := testConfig(t)
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	cfg.Link.TLSCert, cfg.Link.TLSKey, _ = ca.Issue(t, dir, "cp")
	cfg.Link.TLSClientCAFile = ca.File
	nodeCert, nodeKey, _ := ca.Issue(t, dir, "node")

	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	defer func() { cancel(); <-ran }()

	fetch := func(tc *http.Client) (*snapshot.Snapshot, error) {
		req, _ := http.NewRequest("GET", "https://"+cfg.Listen+"/internal/v1/snapshot?have=0", nil)
		req.Header.Set("Authorization", "Bearer "+testNodeToken)
		req.Header.Set("X-Node-Id", "n1")
		res, err := tc.Do(req)
		if err != nil {
			return nil, err
		}
		defer res.Body.Close()
		var s snapshot.Snapshot
		if res.StatusCode != 200 {
			return nil, nil
		}
		return &s, json.NewDecoder(res.Body).Decode(&s)
	}
	node, err := tlsfiles.ClientConfig(ca.File, nodeCert, nodeKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: node}, Timeout: 10 * time.Second}
	var snap *snapshot.Snapshot
	poll.Until(t, 20*time.Second, "a snapshot over mTLS", func() bool {
		snap, _ = fetch(hc)
		return snap != nil
	})
	if err := snap.VerifySigned(pub); err != nil {
		t.Fatalf("snapshot over TLS does not verify: %v", err)
	}
	noCert, _ := tlsfiles.ClientConfig(ca.File, "", "", nil)
	if _, err := fetch(&http.Client{Transport: &http.Transport{TLSClientConfig: noCert}, Timeout: 10 * time.Second}); err == nil {
		t.Fatal("node without a client certificate was served")
	}
	plain := &http.Client{Timeout: 10 * time.Second}
	if s, err := fetch(plain); err == nil && s != nil {
		t.Fatal("plain HTTP served on the TLS listener")
	}
	// The admin listener answers without TLS on its own address.
	if st, _ := getAt(cfg.Link.AdminListen, "/admin/v1/snapshot", testAdminToken); st != 200 {
		t.Fatalf("admin listener: %d", st)
	}
}
