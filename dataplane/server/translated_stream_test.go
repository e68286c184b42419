package server

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/usage"
)

// postStream sends a streaming request and returns the response with its whole body.
func (g *protoGateway) postRaw(t testing.TB, path, body string, hdr ...string) result {
	t.Helper()
	return g.do(t, "POST", path, g.Key, body, hdr...)
}

// TestTranslatedStreamGolden pins the bytes a client receives from a chat-only route
// through translation: Messages-style and Responses-style events for text, a streamed tool
// call (its arguments in fragments) and an output-limit stop. A fresh simulator per case
// keeps the upstream IDs, and so the translated ones, stable.
func TestTranslatedStreamGolden(t *testing.T) {
	const weatherTool = `"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius"]}}}}]`
	const weatherFn = `"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius"]}}}}]`
	cases := []struct {
		name, path, body string
		result           string
		in, out          int64
	}{
		{"messages_text", "/v1/messages",
			`{"model":"sim-chat","max_tokens":50,"stream":true,"system":"be brief","messages":[{"role":"user","content":"hello there"}]}`,
			usage.ResultOK, 4, 4},
		{"messages_tool_call", "/v1/messages",
			`{"model":"sim-chat","max_tokens":50,"stream":true,` + weatherTool + `,"messages":[{"role":"user","content":"weather in Malmö?"}]}`,
			usage.ResultOK, 3, 4},
		{"messages_max_tokens", "/v1/messages",
			`{"model":"sim-chat","max_tokens":2,"stream":true,"messages":[{"role":"user","content":"hello there"}]}`,
			usage.ResultOK, 2, 2},
		{"responses_text", "/v1/responses",
			`{"model":"sim-chat","stream":true,"instructions":"be brief","input":"hello there"}`,
			usage.ResultOK, 4, 4},
		{"responses_tool_call", "/v1/responses",
			`{"model":"sim-chat","stream":true,` + weatherFn + `,"input":[{"role":"user","content":"weather in Malmö?"}]}`,
			usage.ResultOK, 3, 4},
		{"responses_max_output_tokens", "/v1/responses",
			`{"model":"sim-chat","stream":true,"max_output_tokens":2,"input":"hello there"}`,
			usage.ResultIncomplete, 2, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := startProtoGateway(t, simulator.Knobs{OutputTokens: 4})
			r := g.postRaw(t, c.path, c.body)
			if r.Status != 200 || r.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d %s: %s", r.Status, r.Header.Get("Content-Type"), r.Body)
			}
			path := filepath.Join("testdata", "translated_"+c.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(r.Body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(string(want), r.Body); d != "" {
				t.Errorf("translated stream differs from %s (-want +got):\n%s", path, d)
			}
			rec := g.waitRecords(t, 1)[0]
			if rec.Result != c.result || rec.PromptTokens != c.in || rec.CompletionTokens != c.out || !rec.Routing.Translated || !rec.Stream {
				t.Errorf("record %+v", rec)
			}
		})
	}
}

// TestTranslatedStreamFlushesPerEvent: with the upstream pacing its tokens, every
// translated event reaches the client on its own, as it is produced, not batched.
func TestTranslatedStreamFlushesPerEvent(t *testing.T) {
	g := startProtoGateway(t, simulator.Knobs{OutputTokens: 5, TokensPerSecond: 25})
	for _, c := range []struct{ path, body, delta string }{
		{"/v1/messages", `{"model":"sim-chat","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "event: content_block_delta"},
		{"/v1/responses", `{"model":"sim-chat","stream":true,"input":"hi"}`, "event: response.output_text.delta"},
	} {
		req, _ := http.NewRequest("POST", g.URL+c.path, strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer "+g.Key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var at []time.Time
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadString('\n')
			if strings.HasPrefix(line, c.delta) {
				at = append(at, time.Now())
			}
			if err != nil {
				break
			}
		}
		resp.Body.Close()
		if len(at) != 5 {
			t.Fatalf("%s: %d deltas", c.path, len(at))
		}
		// 25 tokens/s upstream: 40 ms apart. Batched events would arrive together. One
		// short gap is allowed: on a busy machine (the race detector, other tests) one
		// event can reach the client late and the next on time; flushing every other
		// event, or only at the end, still gives two or more.
		var short []time.Duration
		for i := 1; i < len(at); i++ {
			if gap := at[i].Sub(at[i-1]); gap < 15*time.Millisecond {
				short = append(short, gap)
			}
		}
		if len(short) > 1 {
			t.Errorf("%s: %d of %d deltas arrived within 15 ms of the previous one (%v): events are batched", c.path, len(short), len(at)-1, short)
		}
	}
}

// TestTranslatedStreamBroken: an upstream stream that breaks mid-way ends the client's
// stream without its terminal event; the record says incomplete and keeps the request's
// routing.
func TestTranslatedStreamBroken(t *testing.T) {
	for _, c := range []struct{ path, body, terminal string }{
		{"/v1/messages", `{"model":"sim-chat","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "message_stop"},
		{"/v1/responses", `{"model":"sim-chat","stream":true,"input":"hi"}`, "response.completed"},
		{"/v1/messages", `{"model":"sim-native","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "message_stop"},
		{"/v1/responses", `{"model":"sim-native","stream":true,"input":"hi"}`, "response.completed"},
	} {
		// A gateway per case: the upstream connection the broken stream used is gone.
		g := startProtoGateway(t, simulator.Knobs{OutputTokens: 8, FailAfterEvents: 3})
		r := g.postRaw(t, c.path, c.body)
		if r.Status != 200 || strings.Contains(r.Body, c.terminal) || !strings.Contains(r.Body, "event: ") {
			t.Errorf("%s: status %d body %s", c.path, r.Status, r.Body)
		}
		rec := g.waitRecords(t, 1)[0]
		if rec.Result != usage.ResultIncomplete || rec.Status != 200 {
			t.Errorf("%s: record %+v", c.path, rec)
		}
	}
}

// TestTranslatedStreamClientGone: a client closing the connection mid-stream cancels the
// upstream, and the request is recorded as cancelled.
func TestTranslatedStreamClientGone(t *testing.T) {
	g := startProtoGateway(t, simulator.Knobs{OutputTokens: 200, TokensPerSecond: 50})
	req, _ := http.NewRequest("POST", g.URL+"/v1/messages",
		strings.NewReader(`{"model":"sim-chat","max_tokens":500,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("x-api-key", g.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	for i := 0; i < 6; i++ {
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	resp.Body.Close()
	rec := g.waitRecords(t, 1)[0]
	if rec.Result != usage.ResultCancelled || !rec.Routing.Translated {
		t.Errorf("record %+v", rec)
	}
	_, _ = io.Copy(io.Discard, br)
}
