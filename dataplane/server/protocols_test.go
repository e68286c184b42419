package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/relay"
	"github.com/sekgate/gateway/dataplane/tokens"
	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

const (
	msgBody  = `{"model":"sim-native","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`
	respBody = `{"model":"sim-native","input":"hi"}`
	sysBody  = `{"model":"sim-decider","state":"the parcel arrived broken","questions":{"q1":{"type":"choice","choices":["refund","replace"]},"q2":{"type":"noul"},"q3":{"type":"score"}}}`
)

// TestProtocolRefusals: refusal rules at the HTTP level, a few per endpoint (reqparse's
// tests hold the exhaustive tables). Every refusal is the envelope with the right status
// and param, Messages-style on /v1/messages*, and nothing is forwarded or recorded.
func TestProtocolRefusals(t *testing.T) {
	g := startProtoGateway(t, simulator.Knobs{})
	big := `{"model":"sim-decider","state":"` + strings.Repeat("a", 128<<10) + `","questions":{"q":{"type":"noul"}}}`
	cases := []struct {
		name, path, body string
		hdr              []string // replaces the default bearer key when set
		status           int
		code, param      string
	}{
		// Messages-style.
		{"messages: max_tokens required", "/v1/messages", `{"model":"sim-native","messages":[{"role":"user","content":"hi"}]}`, nil, 400, "", "max_tokens"},
		{"messages: max_tokens min 1", "/v1/messages", `{"model":"sim-native","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, nil, 400, "", "max_tokens"},
		{"messages: messages required", "/v1/messages", `{"model":"sim-native","max_tokens":5}`, nil, 400, "", "messages"},
		{"messages: hosted tool", "/v1/messages", `{"model":"sim-chat","max_tokens":5,"tools":[{"type":"web_search_20250305","name":"web_search"}],"messages":[{"role":"user","content":"hi"}]}`, nil, 400, "", "tools[0].type"},
		{"messages: tool without input_schema", "/v1/messages", `{"model":"sim-chat","max_tokens":5,"tools":[{"name":"f"}],"messages":[{"role":"user","content":"hi"}]}`, nil, 400, "", "tools[0].input_schema"},
		{"messages: URL image source", "/v1/messages", `{"model":"sim-chat","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}]}]}`, nil, 400, "", "messages[0].content[0].source.type"},
		{"messages: unknown model", "/v1/messages", `{"model":"nope","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, nil, 404, "model_not_found", "model"},
		{"messages: hidden model", "/v1/messages", `{"model":"sim-hidden","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, nil, 404, "model_not_found", "model"},
		{"messages: chat-only route without translation", "/v1/messages", `{"model":"sim-chat-plain","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, nil, 400, "unsupported_protocol", "model"},
		{"messages: not JSON", "/v1/messages", `{"model":`, nil, 400, "", ""},
		{"messages: Authorization wins though invalid", "/v1/messages", msgBody, []string{"Authorization", "Bearer sgw_000000000000_" + strings.Repeat("0", 40), "x-api-key", "KEY"}, 401, "invalid_api_key", ""},
		{"messages: Authorization not bearer", "/v1/messages", msgBody, []string{"Authorization", "Basic abc", "x-api-key", "KEY"}, 401, "invalid_api_key", ""},
		{"messages: no key", "/v1/messages", msgBody, []string{"anthropic-version", "2023-06-01"}, 401, "invalid_api_key", ""},
		{"messages: broke", "/v1/messages", msgBody, []string{"x-api-key", "BROKE"}, 402, "insufficient_quota", ""},
		// count_tokens.
		{"count_tokens: visible model", "/v1/messages/count_tokens", `{"model":"sim-native","messages":[{"role":"user","content":"hi"}]}`, nil, 400, "unsupported_protocol", "model"},
		{"count_tokens: translated model", "/v1/messages/count_tokens", `{"model":"acme/sim-chat","messages":[{"role":"user","content":"hi"}]}`, []string{"x-api-key", "KEY"}, 400, "unsupported_protocol", "model"},
		{"count_tokens: stream true", "/v1/messages/count_tokens", `{"model":"sim-native","stream":true,"messages":[{"role":"user","content":"hi"}]}`, nil, 400, "", "stream"},
		{"count_tokens: unknown model", "/v1/messages/count_tokens", `{"model":"nope","messages":[{"role":"user","content":"hi"}]}`, nil, 404, "model_not_found", "model"},
		{"count_tokens: hidden model", "/v1/messages/count_tokens", `{"model":"sim-hidden","messages":[{"role":"user","content":"hi"}]}`, nil, 404, "model_not_found", "model"},
		{"count_tokens: broke", "/v1/messages/count_tokens", `{"model":"sim-native","messages":[{"role":"user","content":"hi"}]}`, []string{"Authorization", "Bearer BROKE"}, 402, "insufficient_quota", ""},
		// Responses-style.
		{"responses: store true", "/v1/responses", `{"model":"sim-native","input":"hi","store":true}`, nil, 400, "", "store"},
		{"responses: background", "/v1/responses", `{"model":"sim-native","input":"hi","background":true}`, nil, 400, "", "background"},
		{"responses: previous_response_id", "/v1/responses", `{"model":"sim-chat","input":"hi","previous_response_id":"resp_1"}`, nil, 400, "", "previous_response_id"},
		{"responses: conversation", "/v1/responses", `{"model":"sim-chat","input":"hi","conversation":"conv_1"}`, nil, 400, "", "conversation"},
		{"responses: hosted tool", "/v1/responses", `{"model":"sim-chat","input":"hi","tools":[{"type":"web_search"}]}`, nil, 400, "", "tools[0].type"},
		{"responses: max_output_tokens 0", "/v1/responses", `{"model":"sim-chat","input":"hi","max_output_tokens":0}`, nil, 400, "", "max_output_tokens"},
		{"responses: remote image", "/v1/responses", `{"model":"sim-chat","input":[{"role":"user","content":[{"type":"input_image","image_url":"https://example.com/a.png"}]}]}`, nil, 400, "", "input[0].content[0].image_url"},
		{"responses: x-api-key is not a key here", "/v1/responses", respBody, []string{"x-api-key", "KEY"}, 401, "invalid_api_key", ""},
		{"responses: chat-only route without translation", "/v1/responses", `{"model":"sim-chat-plain","input":"hi"}`, nil, 400, "unsupported_protocol", "model"},
		// Decision model.
		{"systemone: over 128 KiB", "/v1/systemone", big, nil, 413, "request_too_large", ""},
		{"systemone: state required", "/v1/systemone", `{"model":"sim-decider","questions":{"q":{"type":"noul"}}}`, nil, 400, "", "state"},
		{"systemone: questions required", "/v1/systemone", `{"model":"sim-decider","state":"x"}`, nil, 400, "", "questions"},
		{"systemone: choice without choices", "/v1/systemone", `{"model":"sim-decider","state":"x","questions":{"pick":{"type":"choice"}}}`, nil, 400, "", "questions.pick"},
		{"systemone: empty choices", "/v1/systemone", `{"model":"sim-decider","state":"x","questions":{"pick":{"type":"choice","choices":[]}}}`, nil, 400, "", "questions.pick"},
		{"systemone: unknown type", "/v1/systemone", `{"model":"sim-decider","state":"x","questions":{"q7":{"type":"essay"}}}`, nil, 400, "", "questions.q7"},
		{"systemone: chat model", "/v1/systemone", `{"model":"sim-chat","state":"x","questions":{"q":{"type":"noul"}}}`, nil, 400, "unsupported_protocol", "model"},
		{"systemone: decider on chat", "/v1/chat/completions", `{"model":"sim-decider","messages":[{"role":"user","content":"hi"}]}`, nil, 400, "unsupported_protocol", "model"},
		{"systemone: decider on messages", "/v1/messages", `{"model":"sim-decider","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, nil, 400, "unsupported_protocol", "model"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := g.Meter.Count()
			hdr := []string{"Authorization", "Bearer " + g.Key}
			if c.hdr != nil {
				hdr = nil
				for _, h := range c.hdr {
					h = strings.ReplaceAll(h, "BROKE", g.BrokeK)
					hdr = append(hdr, strings.ReplaceAll(h, "KEY", g.Key))
				}
			}
			r := g.do(t, "POST", c.path, "", c.body, hdr...)
			checkEnvelope(t, r, c.status, c.code)
			if p := gjson.Get(r.Body, "error.param").Str; p != c.param {
				t.Errorf("param %q, want %q: %s", p, c.param, r.Body)
			}
			ms := strings.HasPrefix(c.path, "/v1/messages")
			if got := gjson.Get(r.Body, "type").Str == "error"; got != ms {
				t.Errorf("top-level type error present %v, want %v: %s", got, ms, r.Body)
			}
			if g.Meter.Count() != before {
				t.Errorf("a refusal was recorded")
			}
		})
	}
}

// TestSystemOne: decision-model answers pass through unchanged and are metered at the
// model's rates (input_tokens and output_tokens of the answer).
func TestSystemOne(t *testing.T) {
	g := startProtoGateway(t, simulator.Knobs{})
	r := g.do(t, "POST", "/v1/systemone", g.Key, sysBody)
	if r.Status != 200 || r.Header.Get("X-Service-Provider") != "sim-se" {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	var ans struct {
		Model   string                     `json:"model"`
		Answers map[string]json.RawMessage `json:"answers"`
		Usage   struct{ InputTokens, OutputTokens int64 }
	}
	if err := json.Unmarshal([]byte(r.Body), &ans); err != nil {
		t.Fatal(err)
	}
	if len(ans.Answers) != 3 || !gjson.Get(r.Body, "answers.q1.choice").Exists() || !gjson.Get(r.Body, "answers.q3.score").Exists() {
		t.Errorf("answers %s", r.Body)
	}
	if !strings.HasPrefix(gjson.Get(r.Body, "id").Str, "dec_") || gjson.Get(r.Body, "object").Str != "decision" {
		t.Errorf("the simulator's own fields were not passed through: %s", r.Body)
	}
	rec := g.waitRecords(t, 1)[0]
	if rec.Endpoint != "/v1/systemone" || rec.Model != pmDecider || rec.PromptTokens != 4 || rec.CompletionTokens != 3 ||
		rec.PriceMicroSEK != money.Price(4, 3, pInOre, pOutOre) || rec.Result != usage.ResultOK || rec.Stream || rec.Routing.Translated {
		t.Errorf("record %+v", rec)
	}
	// Deterministic: the same question about the same state gets the same answer.
	if r2 := g.do(t, "POST", "/v1/systemone", g.Key, sysBody); gjson.Get(r2.Body, "answers").Raw != gjson.Get(r.Body, "answers").Raw {
		t.Errorf("answers differ: %s vs %s", r2.Body, r.Body)
	}
	// stream is not part of the protocol: a stream field does not turn the answer into SSE.
	r3 := g.do(t, "POST", "/v1/systemone", g.Key, strings.Replace(sysBody, `"state"`, `"stream":true,"state"`, 1))
	if r3.Status != 200 || !strings.HasPrefix(r3.Header.Get("Content-Type"), "application/json") {
		t.Errorf("stream field: %d %s", r3.Status, r3.Header.Get("Content-Type"))
	}
}

// TestModelsListTranslatedEndpoints: a chat model whose route allows translation lists
// /v1/messages and /v1/responses among its endpoints; a plain chat route does not.
func TestModelsListTranslatedEndpoints(t *testing.T) {
	g := startProtoGateway(t, simulator.Knobs{})
	r := g.do(t, "GET", "/v1/models", g.Key, "")
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	want := map[string]string{
		pmTranslated: `["/v1/chat/completions","/v1/messages","/v1/responses"]`,
		pmNative:     `["/v1/chat/completions","/v1/messages","/v1/responses"]`,
		pmChatOnly:   `["/v1/chat/completions"]`,
		pmDecider:    `["/v1/systemone"]`,
	}
	got := map[string]string{}
	for _, m := range gjson.Get(r.Body, "data").Array() {
		got[m.Get("id").Str] = m.Get("endpoints").Raw
	}
	for id, eps := range want {
		if got[id] != eps {
			t.Errorf("%s endpoints %s, want %s", id, got[id], eps)
		}
	}
	if _, ok := got[pmHidden]; ok {
		t.Errorf("hidden model listed")
	}
}

// TestNativeMessagesBodyPassThrough: on a native route the client's body reaches the
// upstream byte for byte except the model name, with no stream_options added; the answer
// comes back unchanged.
func TestNativeMessagesBodyPassThrough(t *testing.T) {
	var got []byte
	up := newRecordingUpstream(t, func(path string, body []byte) (string, string) {
		got = body
		return "application/json", `{"id":"msg_x","type":"message","role":"assistant","model":"u","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"cache_read_input_tokens":10,"cache_creation_input_tokens":2,"output_tokens":1}}`
	})
	g := startProtoGatewayAt(t, up)
	body := `{"model":"sim-native","max_tokens":16,  "messages":[{"role":"user","content":"hi"}],"metadata":{"user_id":"u1"},"thinking":{"type":"disabled"}}`
	r := g.do(t, "POST", "/v1/messages", g.Key, body)
	if r.Status != 200 || !strings.Contains(r.Body, `"cache_read_input_tokens":10`) {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	want := strings.Replace(body, `"sim-native"`, `"`+pmNativeUp+`"`, 1)
	if string(got) != want {
		t.Errorf("upstream body\n%s\nwant\n%s", got, want)
	}
	rec := g.waitRecords(t, 1)[0]
	if rec.PromptTokens != 15 || rec.CompletionTokens != 1 {
		t.Errorf("cache tokens not billed as input once: %+v", rec)
	}

	sb := strings.Replace(body, `"max_tokens":16`, `"max_tokens":16,"stream":true`, 1)
	up.answer = func(_ string, b []byte) (string, string) {
		got = b
		return "text/event-stream", "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":3,\"cache_read_input_tokens\":10,\"output_tokens\":1}}}\n\n" +
			"event: ping\ndata: {\"type\":\"ping\"}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":7}}\n\n" +
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	}
	r = g.do(t, "POST", "/v1/messages", g.Key, sb)
	if r.Status != 200 || !strings.HasSuffix(r.Body, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n") {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if gjson.GetBytes(got, "stream_options").Exists() || !strings.Contains(string(got), `"stream":true`) {
		t.Errorf("streamed upstream body %s", got)
	}
	rec = g.waitRecords(t, 2)[1]
	if rec.PromptTokens != 13 || rec.CompletionTokens != 7 || rec.Result != usage.ResultOK {
		t.Errorf("stream record %+v", rec)
	}
}

// TestRelayMessagesUsage: usage of native Messages-style streams, field by field.
func TestRelayMessagesUsage(t *testing.T) {
	cases := []struct {
		name, stream string
		in, out      int64
		done         bool
	}{
		{"start then delta", "event: message_start\ndata: {\"message\":{\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\nevent: message_delta\ndata: {\"usage\":{\"output_tokens\":9}}\n\nevent: message_stop\ndata: {}\n\n", 12, 9, true},
		{"cache counts", "event: message_start\ndata: {\"message\":{\"usage\":{\"input_tokens\":2,\"cache_creation_input_tokens\":5,\"cache_read_input_tokens\":100}}}\n\nevent: message_delta\ndata: {\"usage\":{\"output_tokens\":3}}\n\nevent: message_stop\ndata: {}\n\n", 107, 3, true},
		{"cumulative input in delta", "event: message_start\ndata: {\"message\":{\"usage\":{\"input_tokens\":0}}}\n\nevent: message_delta\ndata: {\"usage\":{\"input_tokens\":40,\"output_tokens\":3}}\n\nevent: message_stop\ndata: {}\n\n", 40, 3, true},
		{"no stop", "event: message_start\ndata: {\"message\":{\"usage\":{\"input_tokens\":4}}}\n\nevent: content_block_delta\ndata: {}\n\n", 4, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := fasthttp.AcquireResponse()
			defer fasthttp.ReleaseResponse(resp)
			resp.SetBodyString(c.stream)
			st := proxy.OpenStream(resp, index.EPMessages, proxy.StreamOptions{Total: time.Second})
			defer st.Close()
			var out bytes.Buffer
			w := bufio.NewWriter(&out)
			rel := relay.Protocol{Client: index.EPMessages}.Relay(w, st)
			_ = w.Flush() // the closing event waits for the record; the caller flushes it
			if st.Result.PromptTokens != c.in || st.Result.CompletionTokens != c.out || rel.Done != c.done {
				t.Errorf("result %+v %+v, want %d/%d done %v", st.Result, rel, c.in, c.out, c.done)
			}
			if out.String() != c.stream {
				t.Errorf("relayed bytes differ:\n%q\nwant\n%q", out.String(), c.stream)
			}
		})
	}
	// Impossible usage ends the stream before the event that reports it.
	for _, bad := range []string{`-4`, `1e999`, `9223372036854775807`, `"4"`, `4.5`} {
		resp := fasthttp.AcquireResponse()
		resp.SetBodyString("event: message_start\ndata: {\"message\":{\"usage\":{\"input_tokens\":" + bad + "}}}\n\nevent: message_stop\ndata: {}\n\n")
		st := proxy.OpenStream(resp, index.EPMessages, proxy.StreamOptions{Total: time.Second, Bounds: tokens.NewBounds(8192, 0, 1)})
		var out bytes.Buffer
		w := bufio.NewWriter(&out)
		rel := relay.Protocol{Client: index.EPMessages}.Relay(w, st)
		st.Close()
		fasthttp.ReleaseResponse(resp)
		if !errors.Is(st.Result.Err, proxy.ErrInvalidUsage) || rel.Done || rel.Events != 0 || out.Len() != 0 || st.Result.PromptTokens > 8192 {
			t.Errorf("input_tokens %s: %+v relayed %q", bad, st.Result, out.String())
		}
	}
}

// TestTranslatedInvalidAnswer: a chat route answering 200 with a completion the client's
// protocol cannot carry gets 502, recorded as an upstream error.
func TestTranslatedInvalidAnswer(t *testing.T) {
	up := newRecordingUpstream(t, func(string, []byte) (string, string) {
		return "application/json", `{"id":"x","object":"chat.completion","choices":[]}`
	})
	g := startProtoGatewayAt(t, up)
	r := g.do(t, "POST", "/v1/messages", g.Key, strings.Replace(msgBody, "sim-native", "sim-chat", 1))
	checkEnvelope(t, r, 502, "provider_error")
	if gjson.Get(r.Body, "type").Str != "error" {
		t.Errorf("not Messages-style: %s", r.Body)
	}
	rec := g.waitRecords(t, 1)[0]
	if rec.Status != 502 || rec.Result != usage.ResultUpstreamError || !rec.Routing.Translated {
		t.Errorf("record %+v", rec)
	}
}

// TestTranslatedRequestUnsupported: a request the chat protocol cannot express through
// translation is the client's 400, nothing forwarded.
func TestTranslatedRequestUnsupported(t *testing.T) {
	calls := 0
	up := newRecordingUpstream(t, func(string, []byte) (string, string) {
		calls++
		return "application/json", `{}`
	})
	g := startProtoGatewayAt(t, up)
	body := `{"model":"sim-chat","input":[{"role":"user","content":[{"type":"input_file","file_data":"data:application/pdf;base64,AAAA","filename":"a.pdf"}]}]}`
	r := g.do(t, "POST", "/v1/responses", g.Key, body)
	checkEnvelope(t, r, 400, "")
	if calls != 0 {
		t.Errorf("forwarded %d times", calls)
	}
}

// TestFailoverAcrossNativeAndTranslated: a request fails over before the first byte from a
// dead native route to a translated one (and the body is rebuilt for it); the record lists
// both attempts and says translated.
func TestFailoverAcrossNativeAndTranslated(t *testing.T) {
	sm := startProtoGateway(t, simulator.Knobs{OutputTokens: 3}).Sim
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	snap, key, _ := protoSnapshot(sm.BaseURL())
	for i := range snap.Routes {
		if snap.Routes[i].ID == "rt_native" {
			snap.Routes[i].BaseURL = dead
		}
	}
	// The chat-only model gets a second route: the dead native one first.
	snap.Routes = append(snap.Routes, snapshot.Route{ID: "rt_translated_dead", Model: pmTranslated, Provider: "dead-se",
		BaseURL: dead, Protocols: []string{snapshot.EndpointChat, snapshot.EndpointMessages, snapshot.EndpointResponses},
		Region: "se-sto-2", Country: "SE", Priority: -1, Weight: 1})
	x, err := index.Build(snap)
	if err != nil {
		t.Fatal(err)
	}
	g := startProtoGatewayURL(t, sm.BaseURL())
	g.Store.Swap(x)
	g.Meter.SeedBalances(snap.Balances, snap.BalanceSeq)
	for i, c := range []struct{ path, body string }{
		{"/v1/messages", `{"model":"sim-chat","max_tokens":20,"messages":[{"role":"user","content":"hello there"}]}`},
		{"/v1/responses", `{"model":"sim-chat","stream":true,"input":"hello there"}`},
	} {
		r := g.do(t, "POST", c.path, key, c.body)
		if r.Status != 200 || r.Header.Get("X-Service-Provider") != "sim-se" {
			t.Fatalf("%s: %d %s %s", c.path, r.Status, r.Header.Get("X-Service-Provider"), r.Body)
		}
		rec := g.waitRecords(t, i+1)[i]
		if !rec.Routing.Translated || len(rec.Routing.Attempts) != 2 || rec.Routing.Attempts[0].Route != "rt_translated_dead" ||
			rec.Routing.Attempts[0].Error == "" || rec.Routing.Attempts[1].Route != "rt_translated" || rec.Result != usage.ResultOK ||
			rec.PromptTokens != 2 || rec.CompletionTokens != 3 {
			t.Errorf("%s: record %+v attempts %+v", c.path, rec, rec.Routing.Attempts)
		}
	}
}
