package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/cplink"
	"github.com/sekgate/gateway/dataplane/edge"
	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/dataplane/reqbody"
	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

// rawExchange writes raw to the gateway on a fresh connection and reads until the gateway
// closes it (or the deadline), returning every byte received and whether the gateway
// closed the connection.
func rawExchange(t *testing.T, url string, raw []byte, wait time.Duration) (string, bool) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() { _, _ = c.Write(raw) }()
	_ = c.SetReadDeadline(time.Now().Add(wait))
	var out bytes.Buffer
	_, err = io.Copy(&out, c)
	closed := err == nil || !isTimeout(err)
	return out.String(), closed
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// parseResponses parses every HTTP response in raw.
func parseResponses(t *testing.T, raw string) []result {
	t.Helper()
	br := bufio.NewReader(strings.NewReader(raw))
	var out []result
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return out
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		out = append(out, result{resp.StatusCode, resp.Header, string(b)})
	}
}

// TestStrictFraming: ambiguous framing is answered 400 with the JSON envelope and the
// connection closed, so a request pipelined behind it is never answered (RFC 9112 6.1).
func TestStrictFraming(t *testing.T) {
	g := startGateway(t)
	next := "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
	hdr := "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + g.Keys.SE + "\r\nContent-Type: application/json\r\n"
	body := `{"model":"x"}`
	chunk := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body)
	cases := []struct {
		name, raw string
		status    int
	}{
		{"content-length and chunked", hdr + "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk + next, 400},
		{"chunked and content-length", hdr + "Transfer-Encoding: chunked\r\ncontent-length : 4\r\n\r\n" + chunk + next, 400},
		{"content-length and identity", hdr + "Transfer-Encoding: identity\r\nContent-Length: 13\r\n\r\n" + body + next, 400},
		{"two content-lengths", hdr + "Content-Length: 13\r\nContent-Length: 14\r\n\r\n" + body + next, 400},
		{"two equal content-lengths", hdr + "Content-Length: 13\r\nContent-Length: 13\r\n\r\n" + body + next, 400},
		{"bad chunk size", hdr + "Transfer-Encoding: chunked\r\n\r\nzz\r\n" + body + "\r\n0\r\n\r\n" + next, 400},
		{"overlong chunk", hdr + "Transfer-Encoding: chunked\r\n\r\n2\r\n" + body + "\r\n0\r\n\r\n" + next, 400},
		{"negative chunk size", hdr + "Transfer-Encoding: chunked\r\n\r\n-5\r\n" + body + "\r\n0\r\n\r\n" + next, 400},
		{"huge chunk size", hdr + "Transfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n" + body + "\r\n0\r\n\r\n" + next, 400},
		{"identity without a length", hdr + "Transfer-Encoding: identity\r\n\r\n" + body + next, 400},
		{"identity get", "GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + g.Keys.SE + "\r\nTransfer-Encoding: Identity\r\n\r\n" + next, 400},
		{"chunked list", hdr + "Transfer-Encoding: gzip, chunked\r\n\r\n" + chunk + next, 400},
		{"folded header", hdr + "X-A: b\r\n folded\r\nContent-Length: 13\r\n\r\n" + body + next, 400},
		{"1 MiB header", "GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 1<<20) + "\r\n\r\n" + next, 431},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, closed := rawExchange(t, g.URL, []byte(c.raw), 5*time.Second)
			if !closed {
				t.Fatalf("connection left open; got %q", out)
			}
			rs := parseResponses(t, out)
			if len(rs) != 1 {
				t.Fatalf("%d answers, want exactly 1: %q", len(rs), out)
			}
			checkEnvelope(t, rs[0], c.status, "")
		})
	}
	if n := g.Meter.Count(); n != 0 {
		t.Errorf("%d records from refused requests", n)
	}
	// A well-framed chunked body is still served.
	ok := hdr + "Transfer-Encoding: chunked\r\n\r\n" + chunk
	c, err := net.Dial("tcp", strings.TrimPrefix(g.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, ok+next)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	for i, want := range []int{400, 200} { // messages missing (the body was read whole), then the pipelined healthz
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Errorf("answer %d: status %d, want %d: %s", i, resp.StatusCode, want, b)
		}
	}
}

// TestSlowBodyCut: a body that stops arriving is answered 408 after the body idle timeout;
// one that trickles below the minimum rate is cut too; both connections are closed.
func TestSlowBodyCut(t *testing.T) {
	g := startGateway(t, func(c *Config) {
		c.BodyIdleTimeout = 300 * time.Millisecond
		c.MinBodyRate = 64 << 10
	})
	hdr := "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + g.Keys.SE + "\r\nContent-Length: 100000\r\n\r\n"
	t.Run("stalled", func(t *testing.T) {
		start := time.Now()
		out, closed := rawExchange(t, g.URL, []byte(hdr+strings.Repeat("a", 20000)), 5*time.Second)
		if !closed {
			t.Fatal("connection left open")
		}
		rs := parseResponses(t, out)
		if len(rs) != 1 {
			t.Fatalf("answers %q", out)
		}
		checkEnvelope(t, rs[0], 408, "request_timeout")
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("took %v", d)
		}
	})
	t.Run("trickle", func(t *testing.T) {
		c, err := net.Dial("tcp", strings.TrimPrefix(g.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = io.WriteString(c, hdr+strings.Repeat("a", 9000))
		go func() { // 100 bytes every 100 ms: under the idle timeout, far under the rate
			for range 100 {
				if _, err := io.WriteString(c, strings.Repeat("a", 100)); err != nil {
					return
				}
				// A real sleep: the trickle's pace over a real connection is the subject.
				time.Sleep(100 * time.Millisecond)
			}
		}()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		checkEnvelope(t, result{resp.StatusCode, resp.Header, string(b)}, 408, "request_timeout")
	})
	if n := g.Meter.Count(); n != 0 {
		t.Errorf("%d records", n)
	}
}

// TestLargeBodyStreamed: bodies around and beyond what fasthttp reads before the handler
// (prefetchSize), some sent in pieces, arrive whole.
func TestLargeBodyStreamed(t *testing.T) {
	g := startGateway(t)
	// Padded with whitespace, which the prompt-size estimate does not count.
	head := `{"model":"` + fixture.ModelChat + `","messages":[{"role":"user","content":"hej"}]`
	for _, size := range []int{reqbody.PrefetchMax - 1, reqbody.PrefetchMax, reqbody.PrefetchMax + 1, 16 << 10, 64 << 10, 300 << 10} {
		rest := `,"seed":` + strings.Repeat(" ", size-len(head)-len(`,"seed":0}`)) + `0}`
		body := head + rest
		r := g.do(t, "POST", "/v1/chat/completions", g.Keys.SE, body)
		if r.Status != 200 {
			t.Fatalf("%d bytes: status %d: %s", size, r.Status, r.Body)
		}
		if !strings.HasSuffix(g.Up.lastBody(), rest) {
			t.Errorf("%d bytes: upstream did not get the whole body", size)
		}
	}
}

// TestConnectionCaps: connections over the per-address cap and over the total cap are
// answered with the JSON envelope and closed; closing one frees its place.
func TestConnectionCaps(t *testing.T) {
	g := startGateway(t, func(c *Config) { c.MaxConnsPerAddr = 2; c.MaxConns = 3 })
	addr := strings.TrimPrefix(g.URL, "http://")
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	refused := func(status int) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if !resp.Close {
			t.Error("refusal without Connection: close")
		}
		checkEnvelopeNoID(t, result{resp.StatusCode, resp.Header, string(b)}, status)
	}
	refused(429)
	// The per-address cap counts 127.0.0.1; another loopback address is another client.
	other, err := net.DialTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, mustTCPAddr(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	held = append(held, other)
	c4, err := net.DialTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 3)}, mustTCPAddr(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	_ = c4.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c4), nil)
	if err != nil {
		t.Fatal(err)
	}
	c4.Close()
	if resp.StatusCode != 503 {
		t.Errorf("over the total cap: %d", resp.StatusCode)
	}
	// Freeing a place lets a new connection in, and it is served.
	held[0].Close()
	held = held[1:]
	if !waitFor(3*time.Second, func() bool {
		r, err := http.Get(g.URL + "/healthz")
		if err != nil {
			return false
		}
		r.Body.Close()
		http.DefaultClient.CloseIdleConnections()
		return r.StatusCode == 200
	}) {
		t.Fatal("a freed place was not reusable")
	}
}

func mustTCPAddr(t *testing.T, a string) *net.TCPAddr {
	ta, err := net.ResolveTCPAddr("tcp", a)
	if err != nil {
		t.Fatal(err)
	}
	return ta
}

// checkEnvelopeNoID checks a refusal written before any request was read (no request ID).
func checkEnvelopeNoID(t *testing.T, r result, status int) {
	t.Helper()
	if r.Status != status || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") ||
		!strings.Contains(r.Body, `"error"`) {
		t.Fatalf("refusal %d %v %s, want %d with a JSON envelope", r.Status, r.Header, r.Body, status)
	}
}

// TestStalledStreamConsumerCut: a client that stops reading a stream (without closing) is
// cut by the per-write deadline; the upstream request is cancelled at once and the record
// says cancelled.
func TestStalledStreamConsumerCut(t *testing.T) {
	up := startSim(t, "up", simulator.Knobs{OutputTokens: 1000000})
	g := startSimGateway(t, []snapshot.Route{chatRoute("a", "p", up.BaseURL(), "SE", 0, 1)},
		func(c *Config) { c.WriteTimeout = 300 * time.Millisecond })
	g.withWindow(t, 4_000_000) // the simulator's endless answer stays within the output bound
	c, err := net.Dial("tcp", strings.TrimPrefix(g.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096) // fill the path quickly
	}
	body := `{"model":"llama8b","messages":[{"role":"user","content":"Hej"}],"stream":true}`
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		g.Keys.SE, len(body), body)
	br := bufio.NewReader(c)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	// Stop reading. The upstream keeps producing until the gateway gives up on us.
	if !waitFor(10*time.Second, func() bool { return up.Stats().Cancelled == 1 }) {
		t.Fatalf("upstream not cancelled: %+v", up.Stats())
	}
	rec := g.record(t, 1)
	if rec.Result != usage.ResultCancelled {
		t.Errorf("record result %q, want cancelled", rec.Result)
	}
}

// TestForwardedForTrusted: X-Forwarded-For is believed only from a trusted proxy, and the
// client address is what the control plane receives.
func TestForwardedForTrusted(t *testing.T) {
	got := make(chan string, 4)
	cp := newHeaderEcho(t, got)
	for _, c := range []struct {
		trusted, xff, want string
	}{
		{"", "203.0.113.9", "127.0.0.1"},
		{"127.0.0.0/8", "203.0.113.9", "203.0.113.9"},
		{"127.0.0.0/8", "198.51.100.1, 10.0.0.5, 127.0.0.9", "10.0.0.5"},
		{"127.0.0.0/8,10.0.0.0/8", "198.51.100.1, 10.0.0.5", "198.51.100.1"},
		{"127.0.0.0/8", "garbage, 10.0.0.5", "10.0.0.5"},
		{"127.0.0.0/8", "10.0.0.5, garbage", "127.0.0.1"},
	} {
		p, err := edge.ParseProxies(c.trusted)
		if err != nil {
			t.Fatal(err)
		}
		link, err := cplink.New(cplink.Config{URL: cp, NodeID: "node-1", NodeToken: "node-token"})
		if err != nil {
			t.Fatal(err)
		}
		g := startGateway(t, func(cfg *Config) { cfg.TrustedProxies = p; cfg.Link = link })
		r := g.do(t, "POST", "/v1/service/signup", "", `{}`, "X-Forwarded-For", c.xff)
		if r.Status != 200 {
			t.Fatalf("status %d %s", r.Status, r.Body)
		}
		if v := <-got; v != c.want {
			t.Errorf("trusted %q xff %q: control plane got %q, want %q", c.trusted, c.xff, v, c.want)
		}
	}
}

// newHeaderEcho is a stand-in control plane that reports the X-Forwarded-For it receives.
func newHeaderEcho(t *testing.T, got chan<- string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("X-Forwarded-For")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{}`)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// TestDuplicateCredentialHeaders: two Authorization headers (or two x-api-key headers where
// that header is a credential) are refused; which one a proxy would pick is unknowable.
func TestDuplicateCredentialHeaders(t *testing.T) {
	g := startGateway(t)
	body := `{"model":"` + fixture.ModelChat + `","messages":[{"role":"user","content":"x"}]}`
	for _, c := range []struct {
		name, path string
		headers    []string
	}{
		{"two Authorization", "/v1/chat/completions", []string{"Authorization: Bearer " + g.Keys.SE, "Authorization: Bearer " + g.Keys.EU}},
		{"two equal Authorization", "/v1/chat/completions", []string{"Authorization: Bearer " + g.Keys.SE, "Authorization: Bearer " + g.Keys.SE}},
		{"two x-api-key", "/v1/messages", []string{"x-api-key: " + g.Keys.SE, "X-Api-Key: " + g.Keys.EU}},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw := "POST " + c.path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n" +
				strings.Join(c.headers, "\r\n") + fmt.Sprintf("\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			out, _ := rawExchange(t, g.URL, []byte(raw), 5*time.Second)
			rs := parseResponses(t, out)
			if len(rs) != 1 {
				t.Fatalf("answers: %q", out)
			}
			checkEnvelope(t, rs[0], 401, "invalid_api_key")
		})
	}
	if n := g.Meter.Count(); n != 0 {
		t.Errorf("%d records", n)
	}
}

// TestDocsIgnoresHost: the /docs page, openapi.json's servers and the 501 link are not
// built from the Host header the client sent.
func TestDocsIgnoresHost(t *testing.T) {
	g := startGateway(t)
	for _, host := range []string{"evil.example", "evil.example:443", "127.0.0.1:1"} {
		raw := "GET /docs HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n"
		out, _ := rawExchange(t, g.URL, []byte(raw), 5*time.Second)
		rs := parseResponses(t, out)
		if len(rs) != 1 || rs[0].Status != 200 || strings.Contains(out, "evil") || strings.Contains(out, ":1/") ||
			!strings.Contains(out, "<code>"+g.URL+"/v1</code>") {
			t.Fatalf("Host %q: %q", host, out)
		}
		raw = "GET /openapi.json HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n"
		out, _ = rawExchange(t, g.URL, []byte(raw), 5*time.Second)
		if strings.Contains(out, "evil") || strings.Contains(out, ":1\"") || !strings.Contains(out, `"url": "`+g.URL+`"`) {
			t.Fatalf("openapi.json with Host %q names another server", host)
		}
		raw = "GET /v1/files HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n"
		out, _ = rawExchange(t, g.URL, []byte(raw), 5*time.Second)
		if strings.Contains(out, "evil") || strings.Contains(out, ":1/") || !strings.Contains(out, g.URL+"/openapi.json") {
			t.Fatalf("501 with Host %q: %q", host, out)
		}
	}
}

// TestExpectContinueRefusedFromHeaders: a client that waits for 100 Continue is refused from
// its headers (no key, wrong key, too large) without sending its body; a good one gets 100
// and is served.
func TestExpectContinueRefusedFromHeaders(t *testing.T) {
	g := startGateway(t)
	body := `{"model":"` + fixture.ModelChat + `","messages":[{"role":"user","content":"x"}]}`
	for _, c := range []struct {
		name, hdr string
		status    int
	}{
		{"no key", "Content-Length: 100\r\n", 401},
		{"wrong key", "Authorization: Bearer sgw_000000000000_" + strings.Repeat("0", 40) + "\r\nContent-Length: 100\r\n", 401},
		{"too large", "Authorization: Bearer " + g.Keys.SE + "\r\nContent-Length: 8388609\r\n", 413},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw := "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n" + c.hdr + "\r\n"
			out, closed := rawExchange(t, g.URL, []byte(raw), 5*time.Second)
			rs := parseResponses(t, out)
			if !closed || len(rs) != 1 {
				t.Fatalf("closed %v, answers %q", closed, out)
			}
			checkEnvelope(t, rs[0], c.status, "")
		})
	}
	// A good request gets 100 Continue, then its answer.
	c, err := net.Dial("tcp", strings.TrimPrefix(g.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", g.Keys.SE, len(body))
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
		t.Fatalf("first line %q %v", line, err)
	}
	_, _ = br.ReadString('\n') // the blank line after the 100
	_, _ = io.WriteString(c, body)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
}

// TestOversizedFromHeaders: a declared length over the endpoint's limit is answered 413,
// naming that endpoint's limit in its path's envelope style, before any body byte is sent.
func TestOversizedFromHeaders(t *testing.T) {
	g := startGateway(t)
	for _, c := range []struct {
		path, limit string
		cl          int
	}{
		{"/v1/chat/completions", "8 MiB", MaxBodySize + 1},
		{"/v1/messages", "8 MiB", MaxBodySize + 1},
		{"/v1/systemone", "128 KiB", maxSystemOneBody + 1},
		{"/v1/service/topup", "1 MiB", maxForwardBody + 1},
	} {
		raw := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", c.path, g.Keys.SE, c.cl)
		out, closed := rawExchange(t, g.URL, []byte(raw), 5*time.Second)
		rs := parseResponses(t, out)
		if !closed || len(rs) != 1 {
			t.Fatalf("%s: closed %v, %q", c.path, closed, out)
		}
		checkEnvelope(t, rs[0], 413, "")
		if !strings.Contains(rs[0].Body, c.limit) {
			t.Errorf("%s: %s does not name the %s limit", c.path, rs[0].Body, c.limit)
		}
		if ms := strings.HasPrefix(rs[0].Body, `{"type":"error"`); ms != strings.HasPrefix(c.path, "/v1/messages") {
			t.Errorf("%s: envelope style %s", c.path, rs[0].Body)
		}
	}
}

// BenchmarkBadFraming: the framing check every request with a body pays, on the header
// block an OpenAI SDK sends.
func BenchmarkBadFraming(b *testing.B) {
	raw := []byte("Host: gateway.example\r\nAccept-Encoding: gzip, deflate\r\nConnection: keep-alive\r\nAccept: application/json\r\n" +
		"Content-Type: application/json\r\nUser-Agent: OpenAI/Python 1.54.0\r\nX-Stainless-Lang: python\r\nX-Stainless-Package-Version: 1.54.0\r\n" +
		"X-Stainless-OS: Linux\r\nX-Stainless-Arch: x64\r\nX-Stainless-Runtime: CPython\r\nX-Stainless-Runtime-Version: 3.12.3\r\n" +
		"Authorization: Bearer sgw_0123456789ab_0123456789012345678901234567890123456789\r\nX-Stainless-Async: false\r\n" +
		"x-stainless-retry-count: 0\r\nContent-Length: 112\r\n\r\n")
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if reqbody.BadFraming(raw) {
			b.Fatal("good framing refused")
		}
	}
}

// TestProxiedClientCap: behind a trusted proxy the per-address cap applies to the client
// X-Forwarded-For names, as keyless requests in progress: one client at its cap is refused
// 429 while another behind the same proxy is served, its requests with a valid key are the
// account's and served, and its place comes back.
func TestProxiedClientCap(t *testing.T) {
	p, err := edge.ParseProxies("127.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	g := startGateway(t, func(c *Config) {
		c.TrustedProxies = p
		c.MaxConnsPerAddr = 1
		c.Register = func(r *router.Router) {
			r.GET("/test/hold", func(ctx *fasthttp.RequestCtx) {
				entered <- struct{}{}
				<-release
			})
		}
	})
	// Client A holds its one place with a keyless request that waits.
	held := make(chan result, 1)
	go func() { held <- g.do(t, "GET", "/test/hold", "", "", "X-Forwarded-For", "203.0.113.5") }()
	<-entered
	req := func(key, xff string) result {
		return g.do(t, "GET", "/v1/models", key, "", "X-Forwarded-For", xff)
	}
	checkEnvelope(t, req("", "203.0.113.5"), 429, "too_many_connections")
	if r := req(g.Keys.SE, "203.0.113.5"); r.Status != 200 {
		t.Fatalf("the client's request with a valid key: %d %s", r.Status, r.Body)
	}
	if r := req(g.Keys.SE, "203.0.113.6"); r.Status != 200 {
		t.Fatalf("another client behind the proxy: %d %s", r.Status, r.Body)
	}
	if r := req(g.Keys.SE, ""); r.Status != 200 { // the proxy's own requests are not counted per client
		t.Fatalf("proxy without X-Forwarded-For: %d %s", r.Status, r.Body)
	}
	close(release)
	<-held
	if r := req("", "203.0.113.5"); r.Status != 401 {
		t.Fatalf("the client's place did not come back: %d %s", r.Status, r.Body)
	}
}
