package node

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/discovery"
	"github.com/sekgate/gateway/dataplane/fleetshare"
	"github.com/sekgate/gateway/dataplane/meter"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/dataplane/scrape"
	"github.com/sekgate/gateway/dataplane/syncclient"
	"github.com/sekgate/gateway/internal/poll"
)

// The test binary doubles as the data plane: with childEnv set it runs Main, so the
// benchmark measures a real process (its own RSS) without a separate build.
const childEnv = "DATAPLANE_TEST_CHILD_ARGS"

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(childEnv); ok {
		Main(strings.Fields(args))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestEdgeFlags(t *testing.T) {
	o, err := parseFlags([]string{"--node-token", testNodeToken, "--insecure-unsigned-snapshots"})
	if err != nil {
		t.Fatal(err)
	}
	e := o.Edge
	if e.HeaderTimeout != 10*time.Second || e.BodyIdleTimeout != 10*time.Second || e.MinBodyRate != 4096 ||
		e.IdleTimeout != 60*time.Second || e.WriteTimeout != 30*time.Second || e.MaxHeaderBytes != 8192 ||
		e.MaxConns != 10000 || e.MaxConnsPerAddr != 100 || e.TrustedProxies.Len() != 0 {
		t.Errorf("defaults %+v", e)
	}
	o, err = parseFlags([]string{"--node-token", testNodeToken, "--insecure-unsigned-snapshots", "--trusted-proxies", "10.0.0.0/8, 192.0.2.1", "--max-conns-per-addr", "-1"})
	if err != nil || o.Edge.TrustedProxies.Len() != 2 || o.Edge.MaxConnsPerAddr != -1 {
		t.Errorf("trusted proxies: %v %+v", err, o.Edge)
	}
	for _, bad := range [][]string{
		{"--trusted-proxies", "10.0.0.0/33"},
		{"--trusted-proxies", "proxy.example"},
		{"--header-timeout", "0s"},
		{"--write-timeout", "-1s"},
		{"--max-header-bytes", "100"},
		{"--test-box-listen", "127.0.0.1:9110"},
		{"--test-box-token", "testbox_0123456789abcdef0123456789abcdef"},
		{"--test-box-listen", "127.0.0.1:9110", "--test-box-token", "short"},
		{"--test-box-listen", "127.0.0.1:9110", "--test-box-token", testNodeToken},
	} {
		if _, err := parseFlags(append([]string{"--node-token", testNodeToken, "--insecure-unsigned-snapshots"}, bad...)); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// BenchmarkIdleKeepAliveConns reports what 10,000 idle keep-alive client connections cost
// a data-plane process: each connection makes one request and then stays open; the
// process's RSS growth divided by the connections is the bytes/conn metric.
func BenchmarkIdleKeepAliveConns(b *testing.B) {
	const conns = 10000
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dead, _ := net.Listen("tcp", "127.0.0.1:0") // a control plane that never answers
	defer dead.Close()
	args := fmt.Sprintf("--listen %s --control-plane-url http://%s --node-token "+testNodeToken+" --insecure-unsigned-snapshots --data-dir %s --log-level error "+
		"--max-conns %d --max-conns-per-addr -1 --keepalive-timeout 10m", addr, dead.Addr(), b.TempDir(), 2*conns)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+args)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	poll.Until(b, 20*time.Second, "the data plane to start", func() bool {
		r, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			r.Body.Close()
		}
		return err == nil
	})
	http.DefaultClient.CloseIdleConnections()
	req := []byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	open := func(n int) []net.Conn {
		cs := make([]net.Conn, 0, n)
		for range n {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.Write(req); err != nil {
				b.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil || resp.StatusCode != 200 {
				b.Fatalf("request on connection %d: %v", len(cs), err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			cs = append(cs, c)
		}
		return cs
	}
	b.ReportAllocs()
	b.ResetTimer()
	var perConn float64
	for range b.N {
		warm := open(100) // pools and goroutines of the first connections
		before := rss(b, cmd.Process.Pid)
		cs := open(conns)
		// A real sleep: the child process's memory is the subject, and no signal says
		// every connection has reached its keep-alive wait; a second lets them settle.
		time.Sleep(time.Second)
		after := rss(b, cmd.Process.Pid)
		perConn = float64(after-before) / conns
		for _, c := range append(cs, warm...) {
			c.Close()
		}
	}
	b.StopTimer()
	b.ReportMetric(perConn, "bytes/conn")
	b.ReportMetric(0, "ns/op")
}

// rss reads the process's resident set size (VmRSS) from /proc/<pid>/status, in bytes.
func rss(b *testing.B, pid int) int64 {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(st), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" && f[2] == "kB" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

func TestSpoolFlags(t *testing.T) {
	base := []string{"--node-token", testNodeToken, "--insecure-unsigned-snapshots"}
	o, err := parseFlags(base)
	if err != nil {
		t.Fatal(err)
	}
	if o.BatchSize != 500 || o.FsyncWindow != 50*time.Millisecond || fsyncWindow(o.FsyncWindow) != 50*time.Millisecond {
		t.Errorf("defaults: batch size %d, fsync window %v", o.BatchSize, o.FsyncWindow)
	}
	o, err = parseFlags(append(base, "--usage-batch-size", "2000", "--spool-fsync-window", "0"))
	if err != nil || o.BatchSize != 2000 || fsyncWindow(o.FsyncWindow) >= 0 {
		t.Errorf("set: %v, batch size %d, fsync window %v", err, o.BatchSize, fsyncWindow(o.FsyncWindow))
	}
	for _, bad := range [][]string{
		{"--usage-batch-size", "0"},
		{"--usage-batch-size", "10001"},
		{"--spool-fsync-window", "-1ms"},
		{"--spool-fsync-window", "2s"},
		{"--usage-batch-interval", "0s"},
	} {
		if _, err := parseFlags(append(base, bad...)); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// The start feed's subject must be one a node can publish on; without a URL it is not
// looked at.
func TestStartFeedFlags(t *testing.T) {
	base := []string{"--node-token", testNodeToken, "--insecure-unsigned-snapshots"}
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{nil, true},
		{[]string{"--start-feed-url", "nats://127.0.0.1:4222"}, true},
		{[]string{"--start-feed-url", "nats://127.0.0.1:4222", "--start-feed-subject", "fleet-a.starts"}, true},
		{[]string{"--start-feed-url", "nats://127.0.0.1:4222", "--start-feed-subject", "fleet.*"}, false},
		{[]string{"--start-feed-url", "nats://127.0.0.1:4222", "--start-feed-subject", "a..b"}, false},
		{[]string{"--start-feed-subject", "fleet.>"}, true},
	} {
		if _, err := parseFlags(append(base, tc.args...)); (err == nil) != tc.ok {
			t.Errorf("%v: error %v, want ok %v", tc.args, err, tc.ok)
		}
	}
}

func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/dataplane.yaml"
	body := "node-token: " + testNodeToken + "\ninsecure-unsigned-snapshots: true\nlisten: 127.0.0.1:18080\n" +
		"max-conns: 42\ntrusted-proxies: [10.0.0.0/8, 192.0.2.1]\nregion-urls:\n  se: https://se.example\n"
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := parseFlags([]string{"--config", file, "--max-conns", "7"})
	if err != nil {
		t.Fatal(err)
	}
	if o.Listen != "127.0.0.1:18080" || o.Edge.MaxConns != 7 || o.Edge.TrustedProxies.Len() != 2 || o.regionURLs["se"] != "https://se.example" {
		t.Errorf("from file: listen %q max-conns %d proxies %d region-urls %v", o.Listen, o.Edge.MaxConns, o.Edge.TrustedProxies.Len(), o.regionURLs)
	}
	if err := os.WriteFile(file, []byte(body+"max-con: 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := parseFlags([]string{"--config", file}); err == nil || !strings.Contains(err.Error(), `"max-con"`) {
		t.Errorf("unknown key: %v", err)
	}
}

func TestRoutingFlags(t *testing.T) {
	base := []string{"--node-token", testNodeToken, "--insecure-unsigned-snapshots"}
	o, err := parseFlags(base)
	if err != nil {
		t.Fatal(err)
	}
	r := o.Routing
	if !r.FairQueue || r.ScrapeInterval != 50*time.Millisecond || r.Saturation.KV != 0.95 || r.Queue.Headroom != 2 {
		t.Errorf("defaults %+v", r)
	}
	sel, _ := r.selector(scrape.Config{})
	if sel.Loads.FreshFor != 187500*time.Microsecond || sel.Saturation.KV != 0.95 {
		t.Errorf("selector: fresh for %v, saturation %+v", sel.Loads.FreshFor, sel.Saturation)
	}
	o, err = parseFlags(append(base, "--fair-queue=false", "--fair-queue-headroom", "0", "--saturation-queue", "2"))
	if err != nil || o.Routing.FairQueue || o.Routing.queueConfig().Headroom != -1 || o.Routing.Saturation.Queue != 2 {
		t.Errorf("set: %v %+v", err, o.Routing)
	}
	for _, bad := range [][]string{
		{"--scrape-interval", "1ms"},
		{"--saturation-kv", "0"},
		{"--saturation-kv", "1.5"},
		{"--saturation-queue", "-1"},
		{"--fair-queue-max-wait", "0s"},
		{"--fair-queue-depth", "0"},
	} {
		if _, err := parseFlags(append(base, bad...)); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestPublicURLFlag(t *testing.T) {
	base := []string{"--node-token", testNodeToken, "--insecure-unsigned-snapshots"}
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"", "", true},
		{"https://api.example.com/", "https://api.example.com", true},
		{"http://10.0.0.5:8080", "http://10.0.0.5:8080", true},
		{"api.example.com", "", false},
		{"https://user@api.example.com", "", false},
		{"https://api.example.com/?x=1", "", false},
	} {
		o, err := parseFlags(append(base, "--public-url", tc.in))
		if (err == nil) != tc.ok || (tc.ok && o.Edge.PublicURL != tc.want) {
			t.Errorf("--public-url %q: %q, %v", tc.in, o.Edge.PublicURL, err)
		}
	}
}

// TestFlagDefaults: a setting whose default the package that reads it also knows as a
// constant (for callers that build its config in code) has the same default as a flag.
func TestFlagDefaults(t *testing.T) {
	o, err := parseFlags([]string{"--node-token", testNodeToken, "--insecure-unsigned-snapshots"})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ flag, pkg any }{
		"snapshot-max-age":      {o.Link.MaxAge, syncclient.DefaultMaxAge},
		"discovery-interval":    {o.Discovery.Interval, discovery.DefaultInterval},
		"discovery-empty-grace": {o.Discovery.EmptyGrace, discovery.DefaultEmptyGrace},
		"usage-batch-size":      {o.BatchSize, meter.DefaultBatchSize},
		"spool-fsync-window":    {o.FsyncWindow, meter.DefaultFsyncWindow},
		"fleet-interval":        {o.FleetInterval, fleetshare.DefaultInterval},
		"scrape-interval":       {o.Routing.ScrapeInterval, scrape.DefaultInterval},
		"saturation-kv":         {o.Routing.Saturation, routing.DefaultSaturation},
	} {
		if c.flag != c.pkg {
			t.Errorf("--%s defaults to %v, its package to %v", name, c.flag, c.pkg)
		}
	}
}
