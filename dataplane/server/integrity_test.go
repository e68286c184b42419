package server

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

// The tests of this file play a hostile provider (an in-test upstream) against the gateway:
// impossible usage, garbage events, wrong content types, streams cut short. The fixture's
// chat model has an 8,192-token window.

// hostile is an upstream whose every answer is h's.
func hostile(t testing.TB, h http.HandlerFunc) string {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s.URL + "/v1"
}

// answerWithUsage is a chat completion whose usage object is usage.
func answerWithUsage(usageJSON string) string {
	return `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":` + usageJSON + `}`
}

// maxPrice is the most a chat request with output limit maxOut can cost on the fixture's
// chat model (8,192-token window).
func maxPrice(maxOut int64) int64 {
	return money.Price(8192, maxOut, fixture.PriceIn, fixture.PriceOut)
}

// TestImpossibleUsageIsInvalidAnswer: a non-streaming answer whose usage is impossible for
// the request (not a count, beyond the window, beyond what one record may hold; output
// beyond the output limit is charged instead: TestOutputBoundHoldsOnEveryServer), or whose body or
// content type is not JSON, is an invalid answer: the next route answers; with none left
// the client gets 502 and nothing is charged. (Before: the int64 maximum was priced.)
func TestImpossibleUsageIsInvalidAnswer(t *testing.T) {
	cases := []struct{ name, ct, body string }{
		{"completion int64 max", "application/json", answerWithUsage(`{"prompt_tokens":5,"completion_tokens":9223372036854775807,"total_tokens":9223372036854775807}`)},
		{"prompt 1e999", "application/json", answerWithUsage(`{"prompt_tokens":1e999,"completion_tokens":2}`)},
		{"negative", "application/json", answerWithUsage(`{"prompt_tokens":-5,"completion_tokens":2}`)},
		{"float", "application/json", answerWithUsage(`{"prompt_tokens":5.5,"completion_tokens":2}`)},
		{"string", "application/json", answerWithUsage(`{"prompt_tokens":"5","completion_tokens":2}`)},
		{"over a record's bound", "application/json", answerWithUsage(`{"prompt_tokens":5,"completion_tokens":10000001}`)},
		{"prompt over window", "application/json", answerWithUsage(`{"prompt_tokens":8193,"completion_tokens":1}`)},
		{"html content type", "text/html", answerWithUsage(`{"prompt_tokens":5,"completion_tokens":2}`)},
		{"not json", "application/json", `<html>502 Bad Gateway</html>`},
	}
	good := startSim(t, "good", simulator.Knobs{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := hostile(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", c.ct)
				io.WriteString(w, c.body)
			})
			// Alone, the hostile route's answer becomes a 502 that costs nothing.
			g := startSimGateway(t, []snapshot.Route{chatRoute("rt-bad", "bad", bad, "SE", 1, 1)})
			r := g.post(t, g.Keys.SE, chatPlainReq)
			checkEnvelope(t, r, 502, "provider_error")
			rec := g.record(t, 1)
			if rec.Result != usage.ResultUpstreamError || rec.PriceMicroSEK != 0 || rec.Routing.Attempts[0].Error != proxy.FailInvalid {
				t.Fatalf("record %+v %+v", rec, rec.Routing.Attempts)
			}
			// With a second route, the request fails over to it.
			g = startSimGateway(t, []snapshot.Route{chatRoute("rt-bad", "bad", bad, "SE", 1, 1),
				chatRoute("rt-good", "good", good.BaseURL(), "SE", 2, 1)})
			r = g.post(t, g.Keys.SE, chatPlainReq)
			if r.Status != 200 || r.Header.Get("X-Service-Provider") != "good" {
				t.Fatalf("failover: %d %s", r.Status, r.Body)
			}
			rec = g.record(t, 1)
			if rec.Result != usage.ResultOK || len(rec.Routing.Attempts) != 2 || rec.Routing.Attempts[0].Error != proxy.FailInvalid ||
				rec.PriceMicroSEK <= 0 || rec.PriceMicroSEK > maxPrice(4) {
				t.Fatalf("record %+v %+v", rec, rec.Routing.Attempts)
			}
		})
	}
}

// sseChunk is a chat completion chunk carrying content.
func sseChunk(content string) string {
	return `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"` + content + `"},"finish_reason":null}]}` + "\n\n"
}

const sseRole = `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"

// streamUpstream answers every request with the events of script, flushing each.
func streamUpstream(t testing.TB, script func(w io.Writer, flush func(), r *http.Request)) string {
	return hostile(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		script(w, f.Flush, r)
	})
}

// TestGarbageEventEndsStream: a stream whose events stop being JSON after the first byte is
// ended with an error event in the client's protocol, recorded as upstream_error, and the
// route's breaker counts the failure. (Before: relayed as 200 ok, [DONE], 0 tokens.)
func TestGarbageEventEndsStream(t *testing.T) {
	up := streamUpstream(t, func(w io.Writer, flush func(), _ *http.Request) {
		io.WriteString(w, sseRole+sseChunk("a")+sseChunk("b"))
		flush()
		io.WriteString(w, "data: <html>oops</html>\n\n"+sseChunk("c")+"data: [DONE]\n\n")
		flush()
	})
	g := startSimGateway(t, []snapshot.Route{chatRoute("rt-bad", "bad", up, "SE", 1, 1)}, func(c *Config) {
		c.Health = routing.NewHealth(routing.HealthConfig{MinRequests: 4, FailureRatio: 0.5, OpenFor: time.Minute})
	})
	req := `{"model":"llama8b","messages":[{"role":"user","content":"Hej"}],"max_tokens":50,"stream":true}`
	r := g.post(t, g.Keys.SE, req)
	if r.Status != 200 || strings.Contains(r.Body, "[DONE]") || strings.Contains(r.Body, "oops") ||
		!strings.HasSuffix(r.Body, "data: {\"error\":{\"type\":\"upstream_error\",\"message\":\"the provider sent an invalid event; the output is incomplete\",\"code\":\"provider_error\",\"param\":null}}\n\n") {
		t.Fatalf("%d %q", r.Status, r.Body)
	}
	rec := g.record(t, 1)
	if rec.Result != usage.ResultUpstreamError || rec.Routing.Attempts[0].Error != proxy.FailInvalid ||
		rec.CompletionTokens != 2 || !rec.Routing.UsageEstimated || rec.PriceMicroSEK <= 0 {
		t.Fatalf("record %+v %+v", rec, rec.Routing)
	}
	// The second failure opens the breaker (4 outcomes counted, half of them failures).
	g.post(t, g.Keys.SE, req)
	g.record(t, 2)
	if st := g.Health.State(g.route(t, "rt-bad")); st != "open" {
		t.Fatalf("breaker %s after two garbage streams", st)
	}
}

// TestStreamUsageBeyondBoundsEndsStream: usage reported at a stream's end beyond the
// request's output limit ends the stream with an error event; the record charges the
// bounded counts, never more.
func TestStreamUsageBeyondBoundsEndsStream(t *testing.T) {
	for _, u := range []string{`{"prompt_tokens":12,"completion_tokens":9223372036854775807}`,
		`{"prompt_tokens":1e999,"completion_tokens":3}`, `{"prompt_tokens":12,"completion_tokens":51}`} {
		up := streamUpstream(t, func(w io.Writer, flush func(), _ *http.Request) {
			io.WriteString(w, sseRole+sseChunk("a")+sseChunk("b")+sseChunk("c"))
			io.WriteString(w, `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":`+u+"}\n\ndata: [DONE]\n\n")
		})
		g := startSimGateway(t, []snapshot.Route{chatRoute("rt-bad", "bad", up, "SE", 1, 1)})
		r := g.post(t, g.Keys.SE, `{"model":"llama8b","messages":[{"role":"user","content":"Hej"}],"max_tokens":50,"stream":true}`)
		if r.Status != 200 || strings.Contains(r.Body, "[DONE]") || !strings.Contains(r.Body, `"code":"provider_error"`) {
			t.Fatalf("%s: %d %q", u, r.Status, r.Body)
		}
		rec := g.record(t, 1)
		if rec.Result != usage.ResultUpstreamError || rec.PromptTokens > 8192 || rec.CompletionTokens > 50 ||
			rec.PriceMicroSEK > maxPrice(50) || rec.PriceMicroSEK <= 0 {
			t.Fatalf("%s: record %+v", u, rec)
		}
	}
}

// longPrompt is a chat request whose prompt text is 1,000 bytes (a low estimate of 200
// tokens) with an output limit of 100.
var longPrompt = `{"model":"llama8b","messages":[{"role":"user","content":"` + strings.Repeat("abcd ", 200) + `"}],"max_tokens":100,"stream":true}`

// TestClientGoneAfterTwentyTokensIsCharged: a client that disconnects after 20 tokens is
// charged for them (estimated from the events relayed, marked usage_estimated) and for its
// prompt (the node's estimate). (Before: recorded at 0.)
func TestClientGoneAfterTwentyTokensIsCharged(t *testing.T) {
	stop := make(chan struct{})
	up := streamUpstream(t, func(w io.Writer, flush func(), r *http.Request) {
		io.WriteString(w, sseRole)
		for i := range 20 {
			io.WriteString(w, sseChunk(fmt.Sprint(i)))
		}
		flush()
		select { // stall until the gateway cancels the request
		case <-r.Context().Done():
		case <-stop:
		}
	})
	defer close(stop)
	g := startSimGateway(t, []snapshot.Route{chatRoute("rt-a", "a", up, "SE", 1, 1)})
	req, _ := http.NewRequest("POST", g.URL+"/v1/chat/completions", strings.NewReader(longPrompt))
	req.Header.Set("Authorization", "Bearer "+g.Keys.SE)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	got := 0
	for got < 20 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, `"content":"`) && !strings.Contains(line, `"role"`) {
			got++
		}
	}
	// While the stream runs, the meter holds its start entry: the record it gets if the node
	// dies now.
	id := resp.Header.Get("X-Request-Id")
	st, ok := g.Meter.Started(id)
	if !ok || st.Result != usage.ResultInterrupted || st.Status != 200 || st.PromptTokens != 200 || st.CompletionTokens != 0 ||
		!st.Routing.UsageEstimated || st.PriceMicroSEK != money.Price(200, 0, fixture.PriceIn, fixture.PriceOut) {
		t.Fatalf("start entry of %s: %v %+v", id, ok, st)
	}
	resp.Body.Close() // the client goes away
	rec := g.record(t, 1)
	if _, ok := g.Meter.Started(id); ok || rec.RequestID != id {
		t.Fatalf("the end record must supersede the start entry")
	}
	want := money.Price(200, 20, fixture.PriceIn, fixture.PriceOut)
	if rec.Result != usage.ResultCancelled || rec.PromptTokens != 200 || rec.CompletionTokens != 20 ||
		!rec.Routing.UsageEstimated || rec.PriceMicroSEK != want {
		t.Fatalf("record %+v %+v, want 200/20 at %d", rec, rec.Routing, want)
	}
}

// TestProviderCutChargedFromRunningUsage: on a route declaring continuous_usage_stats the
// node asks for running usage, and a stream the provider cuts is charged from the last
// running count, not estimated. Without the flag the same cut stream is estimated.
func TestProviderCutChargedFromRunningUsage(t *testing.T) {
	var sawOption bool
	up := streamUpstream(t, func(w io.Writer, flush func(), r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		continuous := gjson.GetBytes(b, "stream_options.continuous_usage_stats").Bool()
		sawOption = continuous
		io.WriteString(w, sseRole)
		for i := 1; i <= 7; i++ {
			if continuous {
				io.WriteString(w, `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"tok"},"finish_reason":null}],"usage":{"prompt_tokens":321,"completion_tokens":`+fmt.Sprint(3*i)+`,"total_tokens":`+fmt.Sprint(321+3*i)+"}}\n\n")
			} else {
				io.WriteString(w, sseChunk("tok"))
			}
			flush()
		}
		// ...and the provider drops the stream: no finish, no [DONE].
	})
	for _, continuous := range []bool{true, false} {
		rt := chatRoute("rt-a", "a", up, "SE", 1, 1)
		rt.ContinuousUsageStats = continuous
		g := startSimGateway(t, []snapshot.Route{rt})
		r := g.post(t, g.Keys.SE, longPrompt)
		if r.Status != 200 || strings.Contains(r.Body, "[DONE]") {
			t.Fatalf("%d %q", r.Status, r.Body)
		}
		rec := g.record(t, 1)
		if sawOption != continuous {
			t.Fatalf("continuous=%v: upstream saw continuous_usage_stats=%v", continuous, sawOption)
		}
		wantIn, wantOut := int64(321), int64(21)
		if !continuous {
			wantIn, wantOut = 200, 7
		}
		if rec.Result != usage.ResultIncomplete || rec.PromptTokens != wantIn || rec.CompletionTokens != wantOut ||
			rec.Routing.UsageEstimated == continuous || rec.PriceMicroSEK != money.Price(wantIn, wantOut, fixture.PriceIn, fixture.PriceOut) {
			t.Fatalf("continuous=%v: record %+v %+v", continuous, rec, rec.Routing)
		}
	}
}

// TestUsageBoundCountsChoices: a request for n completions may use the output limit n
// times; beyond that it is charged up to what its answer holds (here the bound: the text is
// two letters).
func TestUsageBoundCountsChoices(t *testing.T) {
	for _, c := range []struct {
		out, charged int64
		status       int
	}{{12, 12, 200}, {13, 12, 200}} {
		bad := hostile(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, answerWithUsage(fmt.Sprintf(`{"prompt_tokens":5,"completion_tokens":%d}`, c.out)))
		})
		g := startSimGateway(t, []snapshot.Route{chatRoute("rt-a", "a", bad, "SE", 1, 1)})
		r := g.post(t, g.Keys.SE, `{"model":"llama8b","messages":[{"role":"user","content":"Hej"}],"max_tokens":4,"n":3}`)
		rec := g.record(t, 1)
		if r.Status != c.status || (c.status == 200 && rec.CompletionTokens != c.charged) {
			t.Fatalf("n=3, max_tokens=4, %d output tokens: %d %s %+v", c.out, r.Status, r.Body, rec)
		}
	}
}

// TestAnswerWithoutUsageIsEstimated: a provider that leaves usage out of a whole answer is
// not serving for free: the prompt (bytes / 5) and the generated text (bytes / 8) are estimated and
// the record says usage_estimated. (Before: charged 0.)
func TestAnswerWithoutUsageIsEstimated(t *testing.T) {
	up := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"`+strings.Repeat("tjena ", 50)+`"},"finish_reason":"stop"}]}`)
	})
	g := startSimGateway(t, []snapshot.Route{chatRoute("rt-a", "a", up, "SE", 1, 1)})
	r := g.post(t, g.Keys.SE, strings.Replace(longPrompt, `"stream":true`, `"stream":false`, 1))
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	rec := g.record(t, 1)
	if rec.PromptTokens != 200 || rec.CompletionTokens != 37 || !rec.Routing.UsageEstimated ||
		rec.PriceMicroSEK != money.Price(200, 37, fixture.PriceIn, fixture.PriceOut) {
		t.Fatalf("record %+v %+v", rec, rec.Routing)
	}
}
