package tlsfiles

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/sekgate/gateway/internal/poll"
	"github.com/sekgate/gateway/internal/tlsfiles/tlstest"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// tlsServer serves 200 "ok" with cfg; it returns the URL.
func tlsServer(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	srv.TLS = cfg
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL
}

func get(url string, cfg *tls.Config) (*http.Response, error) {
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

func TestTLSAndMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	otherCA := tlstest.NewCA(t, dir, "other-ca")
	srvCert, srvKey, _ := ca.Issue(t, dir, "cp")
	nodeCert, nodeKey, _ := ca.Issue(t, dir, "node")
	strangerCert, strangerKey, _ := otherCA.Issue(t, dir, "stranger")

	// TLS only.
	scfg, err := ServerConfig(srvCert, srvKey, "", quiet())
	if err != nil {
		t.Fatal(err)
	}
	url := tlsServer(t, scfg)
	ccfg, err := ClientConfig(ca.File, "", "", quiet())
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := get(url, ccfg); err != nil || resp.StatusCode != 200 {
		t.Fatalf("TLS: %v", err)
	}
	wrongCA, _ := ClientConfig(otherCA.File, "", "", quiet())
	if _, err := get(url, wrongCA); err == nil {
		t.Fatal("a server certificate from another CA was accepted")
	}

	// mTLS: a node without a client certificate, or with one from another CA, is refused.
	mcfg, err := ServerConfig(srvCert, srvKey, ca.File, quiet())
	if err != nil {
		t.Fatal(err)
	}
	murl := tlsServer(t, mcfg)
	if _, err := get(murl, ccfg); err == nil {
		t.Fatal("mTLS: node without a client certificate accepted")
	}
	stranger, _ := ClientConfig(ca.File, strangerCert, strangerKey, quiet())
	if _, err := get(murl, stranger); err == nil {
		t.Fatal("mTLS: client certificate from another CA accepted")
	}
	node, err := ClientConfig(ca.File, nodeCert, nodeKey, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := get(murl, node); err != nil || resp.StatusCode != 200 {
		t.Fatalf("mTLS with the node's certificate: %v", err)
	}
}

// Replacing the certificate files takes effect on new connections without a restart.
func TestCertificateReload(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	certFile, keyFile, first := ca.Issue(t, dir, "cp")
	scfg, err := ServerConfig(certFile, keyFile, "", quiet())
	if err != nil {
		t.Fatal(err)
	}
	url := tlsServer(t, scfg)
	ccfg, _ := ClientConfig(ca.File, "", "", quiet())
	serial := func() string {
		resp, err := get(url, ccfg)
		if err != nil {
			t.Fatal(err)
		}
		return resp.TLS.PeerCertificates[0].SerialNumber.String()
	}
	if s := serial(); s != first.String() {
		t.Fatalf("serial %s, want %s", s, first)
	}
	cert2, key2, second := ca.Issue(t, dir, "cp")
	// The reload sees a change in modification time or size: move the new files'
	// modification time on, so that a coarse file-system clock cannot hide the change.
	later := time.Now().Add(time.Minute)
	for _, f := range []string{cert2, key2} {
		if err := os.Chtimes(f, later, later); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, 15*time.Second, "the new certificate served after the files changed", func() bool {
		return serial() == second.String()
	})
}

func TestCheckControlPlaneURL(t *testing.T) {
	tests := []struct {
		url      string
		insecure bool
		ok       bool
	}{
		{"https://cp.internal:8081", false, true},
		{"http://127.0.0.1:8081", false, true},
		{"http://localhost:8081", false, true},
		{"http://[::1]:8081", false, true},
		{"http://10.0.0.5:8081", false, false},
		{"http://cp.internal:8081", false, false},
		{"http://cp.internal:8081", true, true},
		{"ftp://cp.internal", true, false},
		{"cp.internal:8081", false, false},
	}
	for _, tt := range tests {
		if err := CheckControlPlaneURL(tt.url, tt.insecure); (err == nil) != tt.ok {
			t.Errorf("%s insecure=%v: %v", tt.url, tt.insecure, err)
		}
	}
}

func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	cert, key, _ := ca.Issue(t, dir, "x")
	if _, err := ServerConfig(cert, dir+"/missing.key", "", quiet()); err == nil {
		t.Error("missing key accepted")
	}
	if _, err := ServerConfig(cert, key, key, quiet()); err == nil {
		t.Error("a key file accepted as client CA bundle")
	}
	if _, err := ClientConfig("", cert, "", quiet()); err == nil {
		t.Error("client certificate without key accepted")
	}
}
