package payments

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/sekgate/gateway/internal/poll"
	"github.com/sekgate/gateway/internal/syncbuf"
)

// stripeMock is a stripe-mock server (a tool the deploy module pins) listening on a
// unix socket, fronted by a recording reverse proxy on a random loopback port. The socket
// avoids stripe-mock's default HTTPS listener on all interfaces and any port race.
type stripeMock struct {
	URL string // base URL of the recording proxy

	mu       sync.Mutex
	requests []recordedRequest
}

type recordedRequest struct {
	Method, Path string
	Header       http.Header
	Form         url.Values
}

var (
	stripeMockBinOnce sync.Once
	stripeMockBin     string
	stripeMockBinErr  error
)

// buildStripeMock builds github.com/stripe/stripe-mock at the version deploy/go.mod pins
// (the main module links none of it), once per test binary.
func buildStripeMock() (string, error) {
	stripeMockBinOnce.Do(func() {
		gobin, err := exec.LookPath("go")
		if err != nil {
			gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		dir, err := os.MkdirTemp("", "stripe-mock-")
		if err != nil {
			stripeMockBinErr = err
			return
		}
		bin := filepath.Join(dir, "stripe-mock")
		cmd := exec.Command(gobin, "build", "-o", bin, "github.com/stripe/stripe-mock")
		cmd.Dir = filepath.Join("..", "..", "deploy") // from the package's directory
		if out, err := cmd.CombinedOutput(); err != nil {
			stripeMockBinErr = fmt.Errorf("go build stripe-mock: %v\n%s", err, out)
			return
		}
		stripeMockBin = bin
	})
	return stripeMockBin, stripeMockBinErr
}

func startStripeMock(t *testing.T) *stripeMock {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and starts stripe-mock; skipped with -short")
	}
	bin, err := buildStripeMock()
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "stripe-mock.sock")
	var logBuf syncbuf.Buffer
	cmd := exec.Command(bin, "-http-unix", sock)
	cmd.Stdout, cmd.Stderr = &logBuf, &logBuf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start stripe-mock: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	transport := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	probe := &http.Client{Transport: transport, Timeout: time.Second}
	if !poll.Wait(30*time.Second, func() bool {
		var resp *http.Response
		if resp, err = probe.Get("http://stripe-mock/v1/"); err == nil {
			resp.Body.Close()
		}
		return err == nil
	}) {
		t.Fatalf("stripe-mock not ready after 30s: %v\n%s", err, logBuf.String())
	}

	m := &stripeMock{}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(&url.URL{Scheme: "http", Host: "stripe-mock"})
		},
		Transport: transport,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		m.mu.Lock()
		m.requests = append(m.requests, recordedRequest{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Form: form})
		m.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	m.URL = srv.URL
	return m
}

func (m *stripeMock) Requests() []recordedRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]recordedRequest(nil), m.requests...)
}
