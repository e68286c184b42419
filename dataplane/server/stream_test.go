package server

import (
	"bufio"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/shared/usage"
)

var update = flag.Bool("update", false, "rewrite golden files")

func streamReq(t *testing.T, g *gateway, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", g.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+g.Keys.SE)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func waitRecords(t *testing.T, g *gateway, n int) []*usage.Record {
	t.Helper()
	return awaitRecords(t, g.Meter, n)
}

func TestStreamGolden(t *testing.T) {
	cases := []struct {
		name, body, golden string
	}{
		{"no usage asked", `{"model":"llama8b","messages":[{"role":"user","content":"Hej"}],"stream":true}`, "chat_stream_no_usage.golden"},
		{"usage asked", `{"model":"llama8b","messages":[{"role":"user","content":"Hej"}],"stream":true,"stream_options":{"include_usage":true}}`, "chat_stream_usage.golden"},
		{"keep-alive comments dropped", `{"model":"llama8b","messages":[{"role":"user","content":"Hej"}],"stream":true,"test_mode":"comment"}`, "chat_stream_comments.golden"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := startGateway(t)
			resp := streamReq(t, g, c.body)
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("%d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), got)
			}
			if resp.Header.Get("X-Service-Provider") != "sim-se" || !strings.HasPrefix(resp.Header.Get("X-Request-Id"), "req_") {
				t.Errorf("headers %v", resp.Header)
			}
			// The gateway always asks upstream for usage.
			if !gjson.Get(g.Up.lastBody(), "stream_options.include_usage").Bool() {
				t.Errorf("upstream not asked for usage: %s", g.Up.lastBody())
			}
			path := filepath.Join("testdata", c.golden)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("stream bytes differ from %s:\n got %q\nwant %q", path, got, want)
			}
			recs := waitRecords(t, g, 1)
			rec := recs[0]
			if !rec.Stream || rec.Result != usage.ResultOK || rec.PromptTokens != 12 || rec.CompletionTokens != 2 ||
				rec.PriceMicroSEK != 180+120 || rec.Status != 200 || rec.TTFTMS < 1 || rec.TTFTMS > rec.DurationMS+1 {
				t.Errorf("case %d record %+v", i, rec)
			}
		})
	}
}

// TestStreamFlushPerEvent reads events with timestamps while the upstream sleeps 150 ms
// between them: every event must arrive on its own, not batched with the next.
func TestStreamFlushPerEvent(t *testing.T) {
	g := startGateway(t)
	resp := streamReq(t, g, `{"model":"llama8b","messages":[{"role":"user","content":"Hej"}],"stream":true,"test_mode":"sleepy"}`)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	var stamps []time.Time
	var events []string
	var cur strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			break
		}
		cur.WriteString(line)
		if line == "\n" {
			stamps = append(stamps, time.Now())
			events = append(events, cur.String())
			cur.Reset()
		}
	}
	if len(events) != 4 || events[3] != "data: [DONE]\n\n" {
		t.Fatalf("events %q", events)
	}
	for i := 1; i < 3; i++ {
		if gap := stamps[i].Sub(stamps[i-1]); gap < 100*time.Millisecond {
			t.Errorf("event %d arrived %v after event %d: batched", i, gap, i-1)
		}
	}
}

func TestStreamUpstreamBreaksMidStream(t *testing.T) {
	g := startGateway(t)
	resp := streamReq(t, g, `{"model":"llama8b","messages":[{"role":"user","content":"Hej"}],"stream":true,"test_mode":"break"}`)
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	// The client's stream ends with an error (the OpenAI SDKs raise it), never [DONE].
	if strings.Contains(string(got), "[DONE]") || strings.Count(string(got), "data: ") != 3 ||
		!strings.HasSuffix(string(got), "data: "+string(streamCutError)+"\n\n") {
		t.Fatalf("broken stream relayed as %q", got)
	}
	rec := waitRecords(t, g, 1)[0]
	if rec.Result != usage.ResultIncomplete || rec.Status != 200 {
		t.Errorf("record %+v", rec)
	}
}

func TestStreamClientDisconnectCancelsUpstream(t *testing.T) {
	g := startGateway(t)
	resp := streamReq(t, g, `{"model":"llama8b","messages":[{"role":"user","content":"Hej"}],"stream":true,"test_mode":"endless"}`)
	br := bufio.NewReader(resp.Body)
	for i := 0; i < 6; i++ { // a few events, then hang up
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	resp.Body.Close()
	select {
	case <-g.Up.gone:
	case <-time.After(5 * time.Second):
		t.Fatal("upstream request not cancelled after client disconnect")
	}
	rec := waitRecords(t, g, 1)[0]
	if rec.Result != usage.ResultCancelled {
		t.Errorf("record %+v", rec)
	}
}

func TestStreamUpstreamErrorBeforeFirstByte(t *testing.T) {
	g := startGateway(t)
	resp := streamReq(t, g, `{"model":"llama8b","messages":[{"role":"user","content":"Hej"}],"stream":true,"test_mode":"429"}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" || gjson.GetBytes(b, "error.code").Str != "provider_rate_limited" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, b)
	}
}

// TestStreamNeverWrittenIsRecorded: a committed stream whose response fasthttp never
// writes (the client's connection failed first) is still finished when fasthttp releases
// the response: the upstream is closed, the stream no longer counted open, the request
// recorded as cancelled.
func TestStreamNeverWrittenIsRecorded(t *testing.T) {
	g := startGateway(t)
	var ctx fasthttp.RequestCtx
	ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5000}, nil)
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/v1/chat/completions")
	ctx.Request.Header.Set("Authorization", "Bearer "+g.Keys.SE)
	ctx.Request.Header.SetContentType("application/json")
	ctx.Request.SetBodyString(`{"model":"llama8b","messages":[{"role":"user","content":"Hej"}],"stream":true,"test_mode":"endless"}`)
	g.Srv.Handler()(&ctx)
	if ctx.Response.StatusCode() != 200 || !ctx.Response.IsBodyStream() {
		t.Fatalf("status %d, body stream %v: %s", ctx.Response.StatusCode(), ctx.Response.IsBodyStream(), ctx.Response.Body())
	}
	ctx.Response.Reset() // released unwritten
	select {
	case <-g.Up.gone:
	case <-time.After(5 * time.Second):
		t.Fatal("upstream stream still open after its response was released unwritten")
	}
	rec := waitRecords(t, g, 1)[0]
	if rec.Result != usage.ResultCancelled || rec.Status != 200 || !rec.Stream || g.Srv.OpenStreams() != 0 {
		t.Errorf("record %+v, %d streams open", rec, g.Srv.OpenStreams())
	}
}
