package plane

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/pgtest"
	"github.com/sekgate/gateway/internal/flagenv"
	"github.com/sekgate/gateway/internal/poll"
	"github.com/sekgate/gateway/shared/snapshot"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// Tokens of the tests: at least internalapi.MinTokenBytes long.
const (
	testAdminToken = "adm_0123456789abcdef0123456789abcdef"
	testNodeToken  = "node_0123456789abcdef0123456789abcdef"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// testConfig is a runnable configuration on free loopback ports with a fresh signing key;
// it returns the public key too.
func testConfig(t *testing.T) (Config, ed25519.PublicKey) {
	t.Helper()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	pemKey, _, err := snapshot.MarshalKeyPair(priv)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "signing.pem")
	if err := os.WriteFile(keyFile, pemKey, 0o600); err != nil {
		t.Fatal(err)
	}
	return Config{Listen: freeAddr(t), DatabaseURL: flagenv.NewDSN(pgtest.NewDatabase(t)), AdminToken: flagenv.NewSecret(testAdminToken),
		NodeTokens:    flagenv.NewSecret(testNodeToken),
		RetentionDays: 90, MaxConns: 4,
		Link: linkConfig{AdminListen: freeAddr(t), SigningKeyFile: keyFile, Reissue: time.Hour}}, pub
}

func TestFlagsAndEnv(t *testing.T) {
	t.Setenv("GATEWAY_DATABASE_URL", "postgres://env/db")
	t.Setenv("GATEWAY_ADMIN_TOKEN", "env-admin-0123456789abcdef0123456789")
	t.Setenv("GATEWAY_NODE_TOKENS", testNodeToken+","+testNodeToken+"2")
	t.Setenv("GATEWAY_RETENTION_DAYS", "30")
	t.Setenv("GATEWAY_SNAPSHOT_SIGNING_KEY_FILE", "/nonexistent/key.pem") // read by run, not parseFlags
	c, err := parseFlags([]string{"--admin-token", testAdminToken, "--listen", "127.0.0.1:9999"})
	if err != nil {
		t.Fatal(err)
	}
	if c.DatabaseURL.Reveal() != "postgres://env/db" || c.AdminToken.Reveal() != testAdminToken ||
		c.NodeTokens.Reveal() != testNodeToken+","+testNodeToken+"2" ||
		c.RetentionDays != 30 || c.Listen != "127.0.0.1:9999" || c.Link.AdminListen != "127.0.0.1:8082" {
		t.Fatalf("config %+v", c)
	}
	t.Setenv("GATEWAY_RETENTION_DAYS", "many")
	if _, err := parseFlags(nil); err == nil {
		t.Fatal("bad env value accepted")
	}
	t.Setenv("GATEWAY_RETENTION_DAYS", "90")
	c, err = parseFlags([]string{"--service-reads-per-second", "2.5", "--service-checkouts-per-hour", "3"})
	if err != nil || c.ServiceLimits.ReadsPerSecond != 2.5 || c.ServiceLimits.ReadBurst != 50 || c.ServiceLimits.CheckoutsPerHour != 3 {
		t.Fatalf("service limits %+v: %v", c.ServiceLimits, err)
	}
	if _, err := parseFlags([]string{"--service-read-burst", "0"}); err == nil {
		t.Fatal("a zero read burst accepted")
	}
	t.Setenv("GATEWAY_NODE_TOKENS", "")
	if _, err := parseFlags(nil); err == nil {
		t.Fatal("missing node tokens accepted")
	}
}

func TestRunServesAndShutsDown(t *testing.T) {
	cfg, _ := testConfig(t)
	db := pgtest.NewRoles(t) // migrate as the owner, serve as the runtime role
	cfg.DatabaseURL, cfg.MigrateDatabaseURL = flagenv.NewDSN(db.RuntimeURL), flagenv.NewDSN(db.OwnerURL)
	addr := cfg.Listen
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))) }()

	get := func(path, token string) int {
		a := addr
		if strings.HasPrefix(path, "/admin/") {
			a = cfg.Link.AdminListen
		}
		req, _ := http.NewRequest("GET", "http://"+a+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("X-Node-Id", "n1")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	poll.Until(t, 20*time.Second, "the control plane ready", func() bool { return get("/admin/v1/snapshot", testAdminToken) == 200 })
	// The admin API is not on the node listener, not even with the admin token.
	if st, _ := getAt(addr, "/admin/v1/snapshot", testAdminToken); st != 404 {
		t.Fatalf("admin path on the node listener: %d, want 404", st)
	}
	// A node long-polls; shutdown must not wait for it to time out.
	sent := make(chan struct{})
	var once sync.Once
	go func() {
		trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(func() { close(sent) }) }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace),
			"GET", "http://"+addr+"/internal/v1/snapshot?have=1&wait=60", nil)
		req.Header.Set("Authorization", "Bearer "+testNodeToken)
		req.Header.Set("X-Node-Id", "n1")
		if res, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}()
	select {
	case <-sent: // the poll is on its way to the control plane
	case <-time.After(10 * time.Second):
		t.Fatal("long poll never sent")
	}
	cancel()
	// The poll waits 60 s: a shutdown within 20 s, however busy the machine, did not wait for it.
	select {
	case err := <-ran:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("shutdown hung")
	}
}

// The default limits file reaches every snapshot; a bad file stops the start.
func TestDefaultLimitsFile(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("burst: -3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file  string
		burst int
		fails bool
	}{
		{filepath.Join("..", "..", "configs", "limits.default.yaml"), 20, false},
		{bad, 0, true},
		{filepath.Join(t.TempDir(), "missing.yaml"), 0, true},
	} {
		cfg, _ := testConfig(t)
		cfg.DefaultLimitsFile = tc.file
		addr := cfg.Listen
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
		if tc.fails {
			select {
			case err := <-ran:
				if err == nil {
					t.Errorf("%s: run accepted the file", tc.file)
				}
			case <-time.After(20 * time.Second):
				t.Errorf("%s: run did not refuse the file", tc.file)
			}
			cancel()
			continue
		}
		var snap snapshot.Snapshot
		poll.Until(t, 20*time.Second, "a snapshot", func() bool {
			req, _ := http.NewRequest("GET", "http://"+addr+"/internal/v1/snapshot?have=0", nil)
			req.Header.Set("Authorization", "Bearer "+testNodeToken)
			req.Header.Set("X-Node-Id", "n1")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return false
			}
			defer res.Body.Close()
			return res.StatusCode == 200 && json.NewDecoder(res.Body).Decode(&snap) == nil
		})
		if snap.DefaultLimits.Burst != tc.burst || snap.DefaultLimits.RequestsPerSecond <= 0 {
			t.Errorf("snapshot default limits %+v", snap.DefaultLimits)
		}
		cancel()
		<-ran
	}
}

// getAt GETs http://addr+path with a bearer token and returns the status and body.
func getAt(addr, path, token string) (int, []byte) {
	req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Node-Id", "n1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}
