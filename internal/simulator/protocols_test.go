package simulator

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

const weatherTool = `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"location":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["location"]}}}]`

func TestChatNonStreaming(t *testing.T) {
	s := startSim(t, Knobs{})
	tests := []struct {
		name       string
		body       string
		wantPrompt int
		wantN      int
		wantFinish string
		lastText   string
	}{
		{"plain", `{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello there world"}]}`, 5, 16, "stop", "hello there world"},
		{"max_tokens cuts", `{"model":"m","max_tokens":4,"messages":[{"role":"user","content":"hi"}]}`, 1, 4, "length", "hi"},
		{"max_completion_tokens", `{"model":"m","max_completion_tokens":2,"messages":[{"role":"user","content":"hi"}]}`, 1, 2, "length", "hi"},
		{"max_tokens above output", `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`, 1, 16, "stop", "hi"},
		{"content parts", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"one two"},{"type":"text","text":"three"}]}]}`, 3, 16, "stop", "one two three"},
		{"tools without weather", `{"model":"m","tools":` + weatherTool + `,"messages":[{"role":"user","content":"hi"}]}`, 1, 16, "stop", "hi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, hdr, body := post(t, s, "/v1/chat/completions", tt.body)
			if status != 200 || hdr.Get("Content-Type") != "application/json" {
				t.Fatalf("status %d %q: %s", status, hdr.Get("Content-Type"), body)
			}
			m := decode(t, string(body))
			if m["object"] != "chat.completion" || m["model"] != "m" || !strings.HasPrefix(m["id"].(string), "chatcmpl-") {
				t.Errorf("head: %s", body)
			}
			text := dig(m, "choices", 0, "message", "content")
			if want := GenerateText(tt.lastText, tt.wantN); text != want {
				t.Errorf("text %q, want %q", text, want)
			}
			if dig(m, "choices", 0, "message", "role") != "assistant" || dig(m, "choices", 0, "finish_reason") != tt.wantFinish {
				t.Errorf("choice: %s", body)
			}
			u := dig(m, "usage").(map[string]any)
			if num(u["prompt_tokens"]) != tt.wantPrompt || num(u["completion_tokens"]) != tt.wantN || num(u["total_tokens"]) != tt.wantPrompt+tt.wantN {
				t.Errorf("usage %v, want prompt %d completion %d", u, tt.wantPrompt, tt.wantN)
			}
			if CountTokens(text.(string)) != tt.wantN {
				t.Errorf("text has %d tokens, usage says %d", CountTokens(text.(string)), tt.wantN)
			}
		})
	}
}

func TestChatDeterministic(t *testing.T) {
	s := startSim(t, Knobs{})
	body := `{"model":"m","messages":[{"role":"user","content":"same prompt"}]}`
	_, _, a := post(t, s, "/v1/chat/completions", body)
	_, _, b := post(t, s, "/v1/chat/completions", body)
	ta := dig(decode(t, string(a)), "choices", 0, "message", "content")
	tb := dig(decode(t, string(b)), "choices", 0, "message", "content")
	if ta != tb {
		t.Errorf("answers differ: %q vs %q", ta, tb)
	}
	_, _, c := post(t, s, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"other prompt"}]}`)
	if dig(decode(t, string(c)), "choices", 0, "message", "content") == ta {
		t.Errorf("different prompts gave the same answer %q", ta)
	}
}

func TestChatStreaming(t *testing.T) {
	s := startSim(t, Knobs{OutputTokens: 5})
	for _, includeUsage := range []bool{false, true} {
		t.Run("include_usage="+strconv.FormatBool(includeUsage), func(t *testing.T) {
			body := `{"model":"m","stream":true,"stream_options":{"include_usage":` + strconv.FormatBool(includeUsage) + `},"messages":[{"role":"user","content":"stream me please"}]}`
			status, hdr, raw := post(t, s, "/v1/chat/completions", body)
			if status != 200 || hdr.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d %q", status, hdr.Get("Content-Type"))
			}
			ev := parseSSE(t, raw)
			// role, 5 tokens, finish, [usage], [DONE]
			want := 1 + 5 + 1 + 1
			if includeUsage {
				want++
			}
			if len(ev) != want {
				t.Fatalf("%d events, want %d:\n%s", len(ev), want, raw)
			}
			if ev[len(ev)-1].data != "[DONE]" {
				t.Errorf("last event %q, want [DONE]", ev[len(ev)-1].data)
			}
			first := decode(t, ev[0].data)
			if dig(first, "choices", 0, "delta", "role") != "assistant" || first["object"] != "chat.completion.chunk" {
				t.Errorf("first chunk %s", ev[0].data)
			}
			var text strings.Builder
			for _, e := range ev[1:6] {
				text.WriteString(dig(decode(t, e.data), "choices", 0, "delta", "content").(string))
			}
			if text.String() != GenerateText("stream me please", 5) {
				t.Errorf("streamed text %q", text.String())
			}
			fin := decode(t, ev[6].data)
			if dig(fin, "choices", 0, "finish_reason") != "stop" {
				t.Errorf("finish chunk %s", ev[6].data)
			}
			if includeUsage {
				u := decode(t, ev[7].data)
				if ch := u["choices"].([]any); len(ch) != 0 {
					t.Errorf("usage chunk has choices: %s", ev[7].data)
				}
				if num(dig(u, "usage", "prompt_tokens")) != 3 || num(dig(u, "usage", "completion_tokens")) != 5 || num(dig(u, "usage", "total_tokens")) != 8 {
					t.Errorf("usage chunk %s", ev[7].data)
				}
			} else if strings.Contains(string(raw), `"usage"`) {
				t.Errorf("usage sent without include_usage")
			}
		})
	}
}

func TestChatToolCalls(t *testing.T) {
	s := startSim(t, Knobs{})
	body := `{"model":"m","tools":` + weatherTool + `,"messages":[{"role":"user","content":"What is the Weather in Stockholm?"}]}`
	status, _, raw := post(t, s, "/v1/chat/completions", body)
	if status != 200 {
		t.Fatalf("status %d: %s", status, raw)
	}
	m := decode(t, string(raw))
	if dig(m, "choices", 0, "finish_reason") != "tool_calls" {
		t.Fatalf("finish: %s", raw)
	}
	if dig(m, "choices", 0, "message", "content") != nil {
		t.Errorf("content should be null with tool calls: %s", raw)
	}
	tc := dig(m, "choices", 0, "message", "tool_calls", 0)
	if dig(tc, "type") != "function" || dig(tc, "function", "name") != "get_weather" || !strings.HasPrefix(dig(tc, "id").(string), "call_") {
		t.Errorf("tool call %v", tc)
	}
	args := dig(tc, "function", "arguments").(string)
	var parsed map[string]any
	if err := json.Unmarshal([]byte(args), &parsed); err != nil || parsed["location"] != "Stockholm" || parsed["unit"] != "celsius" {
		t.Errorf("arguments %q (%v)", args, err)
	}
	if got := num(dig(m, "usage", "completion_tokens")); got != CountTokens(args) {
		t.Errorf("completion_tokens %d, want %d", got, CountTokens(args))
	}

	// Streamed: the arguments arrive in several fragments that join to the same JSON.
	_, _, sraw := post(t, s, "/v1/chat/completions", strings.Replace(body, `{"model":"m",`, `{"model":"m","stream":true,`, 1))
	ev := parseSSE(t, sraw)
	first := decode(t, ev[0].data)
	if dig(first, "choices", 0, "delta", "tool_calls", 0, "function", "name") != "get_weather" || dig(first, "choices", 0, "delta", "tool_calls", 0, "id") == nil {
		t.Errorf("first tool chunk %s", ev[0].data)
	}
	var joined strings.Builder
	frags := 0
	for _, e := range ev[1:] {
		if e.data == "[DONE]" {
			break
		}
		d := decode(t, e.data)
		if a, ok := dig(d, "choices", 0, "delta", "tool_calls", 0, "function", "arguments").(string); ok {
			joined.WriteString(a)
			frags++
			if dig(d, "choices", 0, "delta", "tool_calls", 0, "index") != float64(0) {
				t.Errorf("fragment without index: %s", e.data)
			}
		}
	}
	if frags < 3 || joined.String() != args {
		t.Errorf("%d fragments joined to %q, want %q in several", frags, joined.String(), args)
	}
	if fin := decode(t, ev[len(ev)-2].data); dig(fin, "choices", 0, "finish_reason") != "tool_calls" {
		t.Errorf("finish chunk %s", ev[len(ev)-2].data)
	}

	// A tool result as the last message gets text, not another call.
	follow := `{"model":"m","tools":` + weatherTool + `,"messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"sunny 20C"}]}`
	_, _, fraw := post(t, s, "/v1/chat/completions", follow)
	if f := decode(t, string(fraw)); dig(f, "choices", 0, "finish_reason") != "stop" {
		t.Errorf("after tool result: %s", fraw)
	}
	// Forced by tool_choice or by the extension field, without the word.
	for _, b := range []string{
		`{"model":"m","tool_choice":"required","tools":` + weatherTool + `,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","sim":{"tool_call":true},"tools":` + weatherTool + `,"messages":[{"role":"user","content":"hi"}]}`,
	} {
		_, _, r := post(t, s, "/v1/chat/completions", b)
		if dig(decode(t, string(r)), "choices", 0, "finish_reason") != "tool_calls" {
			t.Errorf("not forced: %s -> %s", b, r)
		}
	}
	_, _, r := post(t, s, "/v1/chat/completions", `{"model":"m","tool_choice":"none","tools":`+weatherTool+`,"messages":[{"role":"user","content":"weather"}]}`)
	if dig(decode(t, string(r)), "choices", 0, "finish_reason") != "stop" {
		t.Errorf("tool_choice none still called: %s", r)
	}
}

func TestCompletions(t *testing.T) {
	s := startSim(t, Knobs{OutputTokens: 6})
	status, _, raw := post(t, s, "/v1/completions", `{"model":"c","prompt":"Once upon a time","max_tokens":4}`)
	if status != 200 {
		t.Fatalf("status %d: %s", status, raw)
	}
	m := decode(t, string(raw))
	if m["object"] != "text_completion" || dig(m, "choices", 0, "text") != GenerateText("Once upon a time", 4) ||
		dig(m, "choices", 0, "finish_reason") != "length" || num(dig(m, "usage", "prompt_tokens")) != 4 ||
		num(dig(m, "usage", "completion_tokens")) != 4 || num(dig(m, "usage", "total_tokens")) != 8 {
		t.Errorf("completion %s", raw)
	}
	_, _, sraw := post(t, s, "/v1/completions", `{"model":"c","prompt":"Once upon a time","stream":true,"stream_options":{"include_usage":true}}`)
	ev := parseSSE(t, sraw)
	if len(ev) != 6+1+1+1 || ev[len(ev)-1].data != "[DONE]" {
		t.Fatalf("events:\n%s", sraw)
	}
	var text strings.Builder
	for _, e := range ev[:6] {
		d := decode(t, e.data)
		text.WriteString(dig(d, "choices", 0, "text").(string))
		if dig(d, "choices", 0, "finish_reason") != nil {
			t.Errorf("early finish %s", e.data)
		}
	}
	if text.String() != GenerateText("Once upon a time", 6) {
		t.Errorf("streamed %q", text.String())
	}
	if dig(decode(t, ev[6].data), "choices", 0, "finish_reason") != "stop" {
		t.Errorf("finish %s", ev[6].data)
	}
	if u := decode(t, ev[7].data); len(u["choices"].([]any)) != 0 || num(dig(u, "usage", "completion_tokens")) != 6 {
		t.Errorf("usage chunk %s", ev[7].data)
	}
	if status, _, _ := post(t, s, "/v1/completions", `{"model":"c"}`); status != 400 {
		t.Errorf("missing prompt: %d", status)
	}
}

func TestEmbeddings(t *testing.T) {
	s := startSim(t, Knobs{})
	status, _, raw := post(t, s, "/v1/embeddings", `{"model":"nomic-embed-text-v1.5","input":["search_query: what is a gateway","two words"]}`)
	if status != 200 {
		t.Fatalf("status %d: %s", status, raw)
	}
	var resp struct {
		Object string `json:"object"`
		Model  string `json:"model"`
		Data   []struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
		Usage map[string]int `json:"usage"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Object != "list" || resp.Model != "nomic-embed-text-v1.5" || len(resp.Data) != 2 ||
		resp.Usage["prompt_tokens"] != 7 || resp.Usage["total_tokens"] != 7 {
		t.Fatalf("response %s", raw[:200])
	}
	for i, d := range resp.Data {
		if d.Object != "embedding" || d.Index != i || len(d.Embedding) != 768 {
			t.Errorf("item %d: object %q index %d dims %d", i, d.Object, d.Index, len(d.Embedding))
		}
		var norm float64
		for _, f := range d.Embedding {
			norm += float64(f) * float64(f)
		}
		if math.Abs(norm-1) > 1e-4 {
			t.Errorf("item %d norm %v, want 1", i, norm)
		}
	}
	want := Embedding("search_query: what is a gateway", 768)
	for i := range want {
		if want[i] != resp.Data[0].Embedding[i] {
			t.Fatalf("component %d: %v, want %v (not deterministic or not float32-exact)", i, resp.Data[0].Embedding[i], want[i])
		}
	}
	if resp.Data[0].Embedding[0] == resp.Data[1].Embedding[0] {
		t.Errorf("different inputs, same vector start")
	}

	// base64 decodes to the same 768 float32s.
	_, _, braw := post(t, s, "/v1/embeddings", `{"model":"e","input":"search_query: what is a gateway","encoding_format":"base64"}`)
	var b64 struct {
		Data []struct {
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(braw, &b64); err != nil || len(b64.Data) != 1 {
		t.Fatalf("base64 response %s (%v)", braw, err)
	}
	bin, err := base64.StdEncoding.DecodeString(b64.Data[0].Embedding)
	if err != nil || len(bin) != 768*4 {
		t.Fatalf("base64: %d bytes, %v", len(bin), err)
	}
	for i := range want {
		if f := math.Float32frombits(binary.LittleEndian.Uint32(bin[4*i:])); f != want[i] {
			t.Fatalf("base64 component %d: %v, want %v", i, f, want[i])
		}
	}

	// dimensions.
	_, _, draw := post(t, s, "/v1/embeddings", `{"model":"e","input":"x","dimensions":64}`)
	var dims struct {
		Data []struct {
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(draw, &dims); err != nil || len(dims.Data[0].Embedding) != 64 {
		t.Errorf("dimensions 64: %s", draw)
	}

	// batch of 128.
	inputs := make([]string, 128)
	for i := range inputs {
		inputs[i] = "doc " + strconv.Itoa(i)
	}
	in, _ := json.Marshal(inputs)
	_, _, many := post(t, s, "/v1/embeddings", `{"model":"e","input":`+string(in)+`,"dimensions":8}`)
	var batch struct {
		Data  []struct{ Index int } `json:"data"`
		Usage map[string]int        `json:"usage"`
	}
	if err := json.Unmarshal(many, &batch); err != nil || len(batch.Data) != 128 || batch.Data[127].Index != 127 || batch.Usage["prompt_tokens"] != 256 {
		t.Errorf("batch of 128: %d items, usage %v (%v)", len(batch.Data), batch.Usage, err)
	}

	for _, bad := range []string{`{"model":"e"}`, `{"model":"e","input":[]}`, `{"model":"e","input":"x","dimensions":0}`, `{"model":"e","input":"x","encoding_format":"hex"}`} {
		if status, _, _ := post(t, s, "/v1/embeddings", bad); status != 400 {
			t.Errorf("%s: status %d, want 400", bad, status)
		}
	}
}

func TestResponses(t *testing.T) {
	s := startSim(t, Knobs{OutputTokens: 3})
	status, _, raw := post(t, s, "/v1/responses", `{"model":"r","instructions":"be nice","input":[{"role":"user","content":[{"type":"input_text","text":"tell me"}]}]}`)
	if status != 200 {
		t.Fatalf("status %d: %s", status, raw)
	}
	m := decode(t, string(raw))
	if m["object"] != "response" || m["status"] != "completed" || !strings.HasPrefix(m["id"].(string), "resp_") {
		t.Errorf("head %s", raw)
	}
	if dig(m, "output", 0, "type") != "message" || dig(m, "output", 0, "content", 0, "type") != "output_text" ||
		dig(m, "output", 0, "content", 0, "text") != GenerateText("tell me", 3) {
		t.Errorf("output %s", raw)
	}
	if u := dig(m, "usage"); num(dig(u, "input_tokens")) != 4 || num(dig(u, "output_tokens")) != 3 || num(dig(u, "total_tokens")) != 7 {
		t.Errorf("usage %v", u)
	}

	// Streaming event order.
	_, _, sraw := post(t, s, "/v1/responses", `{"model":"r","input":"tell me","stream":true}`)
	ev := parseSSE(t, sraw)
	var names []string
	var text strings.Builder
	for i, e := range ev {
		d := decode(t, e.data)
		if d["type"] != e.name || num(d["sequence_number"]) != i {
			t.Errorf("event %d: name %q, data type %v, seq %v", i, e.name, d["type"], d["sequence_number"])
		}
		names = append(names, e.name)
		if e.name == "response.output_text.delta" {
			text.WriteString(d["delta"].(string))
		}
	}
	wantNames := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	if strings.Join(names, ",") != strings.Join(wantNames, ",") {
		t.Errorf("events\n got %v\nwant %v", names, wantNames)
	}
	if text.String() != GenerateText("tell me", 3) {
		t.Errorf("deltas %q", text.String())
	}
	last := decode(t, ev[len(ev)-1].data)
	if dig(last, "response", "status") != "completed" || num(dig(last, "response", "usage", "output_tokens")) != 3 || num(dig(last, "response", "usage", "input_tokens")) != 2 {
		t.Errorf("completed event %s", ev[len(ev)-1].data)
	}

	// max_output_tokens: incomplete.
	_, _, iraw := post(t, s, "/v1/responses", `{"model":"r","input":"x","stream":true,"max_output_tokens":1}`)
	iev := parseSSE(t, iraw)
	if iev[len(iev)-1].name != "response.incomplete" || dig(decode(t, iev[len(iev)-1].data), "response", "incomplete_details", "reason") != "max_output_tokens" {
		t.Errorf("incomplete: %s", iev[len(iev)-1].data)
	}

	// Function tool call, streamed.
	tools := `[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]`
	_, _, fraw := post(t, s, "/v1/responses", `{"model":"r","tools":`+tools+`,"input":"weather in Lund?"}`)
	fm := decode(t, string(fraw))
	if dig(fm, "output", 0, "type") != "function_call" || dig(fm, "output", 0, "name") != "get_weather" ||
		dig(fm, "output", 0, "arguments") != `{"city": "Stockholm"}` || dig(fm, "output", 0, "call_id") == nil {
		t.Errorf("function call %s", fraw)
	}
	_, _, fsraw := post(t, s, "/v1/responses", `{"model":"r","stream":true,"tools":`+tools+`,"input":"weather in Lund?"}`)
	var args strings.Builder
	var done string
	for _, e := range parseSSE(t, fsraw) {
		d := decode(t, e.data)
		switch e.name {
		case "response.function_call_arguments.delta":
			args.WriteString(d["delta"].(string))
		case "response.function_call_arguments.done":
			done = d["arguments"].(string)
		}
	}
	if args.String() != `{"city": "Stockholm"}` || done != args.String() {
		t.Errorf("streamed arguments %q, done %q", args.String(), done)
	}
	// A function_call_output as last item answers with text.
	_, _, oraw := post(t, s, "/v1/responses", `{"model":"r","tools":`+tools+`,"input":[{"role":"user","content":"weather?"},{"type":"function_call","call_id":"c","name":"get_weather","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"sunny"}]}`)
	if dig(decode(t, string(oraw)), "output", 0, "type") != "message" {
		t.Errorf("after output: %s", oraw)
	}
}

func TestMessages(t *testing.T) {
	s := startSim(t, Knobs{OutputTokens: 4})
	status, _, raw := post(t, s, "/v1/messages", `{"model":"a","max_tokens":100,"system":"you are terse","messages":[{"role":"user","content":"hello claude"}]}`)
	if status != 200 {
		t.Fatalf("status %d: %s", status, raw)
	}
	m := decode(t, string(raw))
	if m["type"] != "message" || m["role"] != "assistant" || m["stop_reason"] != "end_turn" ||
		dig(m, "content", 0, "type") != "text" || dig(m, "content", 0, "text") != GenerateText("hello claude", 4) {
		t.Errorf("message %s", raw)
	}
	if num(dig(m, "usage", "input_tokens")) != 5 || num(dig(m, "usage", "output_tokens")) != 4 {
		t.Errorf("usage %s", raw)
	}
	_, _, cut := post(t, s, "/v1/messages", `{"model":"a","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`)
	if c := decode(t, string(cut)); c["stop_reason"] != "max_tokens" || num(dig(c, "usage", "output_tokens")) != 2 {
		t.Errorf("cut %s", cut)
	}

	// Streaming order.
	_, _, sraw := post(t, s, "/v1/messages", `{"model":"a","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hello claude"}]}`)
	ev := parseSSE(t, sraw)
	var names []string
	var text strings.Builder
	for _, e := range ev {
		d := decode(t, e.data)
		if d["type"] != e.name {
			t.Errorf("event %q carries type %v", e.name, d["type"])
		}
		names = append(names, e.name)
		if e.name == "content_block_delta" {
			text.WriteString(dig(d, "delta", "text").(string))
		}
	}
	want := "message_start,ping,content_block_start,content_block_delta,content_block_delta,content_block_delta,content_block_delta,content_block_stop,message_delta,message_stop"
	if strings.Join(names, ",") != want {
		t.Errorf("events %v", names)
	}
	if text.String() != GenerateText("hello claude", 4) {
		t.Errorf("text %q", text.String())
	}
	md := decode(t, ev[len(ev)-2].data)
	if dig(md, "delta", "stop_reason") != "end_turn" || num(dig(md, "usage", "output_tokens")) != 4 || num(dig(md, "usage", "input_tokens")) != 2 {
		t.Errorf("message_delta %s", ev[len(ev)-2].data)
	}
	if num(dig(decode(t, ev[0].data), "message", "usage", "input_tokens")) != 2 {
		t.Errorf("message_start %s", ev[0].data)
	}

	// tool_use with input_json_delta.
	tools := `[{"name":"get_weather","description":"w","input_schema":{"type":"object","properties":{"location":{"type":"string"},"days":{"type":"integer"}}}}]`
	_, _, traw := post(t, s, "/v1/messages", `{"model":"a","max_tokens":100,"tools":`+tools+`,"messages":[{"role":"user","content":[{"type":"text","text":"weather tomorrow?"}]}]}`)
	tm := decode(t, string(traw))
	if tm["stop_reason"] != "tool_use" || dig(tm, "content", 0, "type") != "tool_use" || dig(tm, "content", 0, "name") != "get_weather" ||
		dig(tm, "content", 0, "input", "location") != "Stockholm" || dig(tm, "content", 0, "input", "days") != float64(2) {
		t.Errorf("tool_use %s", traw)
	}
	_, _, tsraw := post(t, s, "/v1/messages", `{"model":"a","max_tokens":100,"stream":true,"tools":`+tools+`,"messages":[{"role":"user","content":"weather tomorrow?"}]}`)
	var partial strings.Builder
	deltas := 0
	tev := parseSSE(t, tsraw)
	for _, e := range tev {
		d := decode(t, e.data)
		if e.name == "content_block_start" && dig(d, "content_block", "type") != "tool_use" {
			t.Errorf("block start %s", e.data)
		}
		if e.name == "content_block_delta" {
			if dig(d, "delta", "type") != "input_json_delta" {
				t.Errorf("delta %s", e.data)
			}
			partial.WriteString(dig(d, "delta", "partial_json").(string))
			deltas++
		}
	}
	if deltas < 2 || partial.String() != `{"location": "Stockholm", "days": 2}` {
		t.Errorf("%d deltas joined to %q", deltas, partial.String())
	}
	if dig(decode(t, tev[len(tev)-2].data), "delta", "stop_reason") != "tool_use" {
		t.Errorf("message_delta %s", tev[len(tev)-2].data)
	}
	// Tool result as the last user turn: text again.
	_, _, rraw := post(t, s, "/v1/messages", `{"model":"a","max_tokens":100,"tools":`+tools+`,"messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"get_weather","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"sunny"}]}]}`)
	if decode(t, string(rraw))["stop_reason"] != "end_turn" {
		t.Errorf("after tool_result %s", rraw)
	}

	// Errors in Messages style.
	status, _, eraw := post(t, s, "/v1/messages", `{"model":"a","messages":[{"role":"user","content":"hi"}]}`)
	if e := decode(t, string(eraw)); status != 400 || e["type"] != "error" || dig(e, "error", "type") != "invalid_request_error" {
		t.Errorf("missing max_tokens: %d %s", status, eraw)
	}
}

func TestSystemOne(t *testing.T) {
	s := startSim(t, Knobs{})
	body := `{"model":"d","state":"the applicant has a stable income","questions":{"decision":{"type":"choice","choices":["approve","reject","review"]},"fraud":{"type":"noul"},"risk":{"type":"score"}}}`
	status, _, raw := post(t, s, "/v1/systemone", body)
	if status != 200 {
		t.Fatalf("status %d: %s", status, raw)
	}
	m := decode(t, string(raw))
	choice := dig(m, "answers", "decision", "choice")
	if c, _ := choice.(string); c != "approve" && c != "reject" && c != "review" {
		t.Errorf("choice %v", choice)
	}
	if v, _ := dig(m, "answers", "fraud", "value").(string); v != "yes" && v != "no" && v != "unknown" {
		t.Errorf("noul %v", v)
	}
	if sc, ok := dig(m, "answers", "risk", "score").(float64); !ok || sc < 0 || sc > 1 {
		t.Errorf("score %v", dig(m, "answers", "risk"))
	}
	if m["model"] != "d" || num(dig(m, "usage", "input_tokens")) != 6 || num(dig(m, "usage", "output_tokens")) != 3 {
		t.Errorf("usage %s", raw)
	}
	_, _, again := post(t, s, "/v1/systemone", body)
	if a := decode(t, string(again)); dig(a, "answers", "risk", "score") != dig(m, "answers", "risk", "score") || dig(a, "answers", "decision", "choice") != choice {
		t.Errorf("not deterministic: %s vs %s", again, raw)
	}
	for _, tc := range []struct{ body, param string }{
		{`{"model":"d","questions":{}}`, "state"},
		{`{"model":"d","state":"x","questions":{"q":{"type":"choice","choices":[]}}}`, "questions.q.choices"},
		{`{"model":"d","state":"x","questions":{"q":{"type":"vote"}}}`, "questions.q.type"},
		{`{"model":"d","state":"x","questions":[]}`, "questions"},
	} {
		status, _, raw := post(t, s, "/v1/systemone", tc.body)
		if status != 400 || dig(decode(t, string(raw)), "error", "param") != tc.param {
			t.Errorf("%s: %d %s, want 400 param %s", tc.body, status, raw, tc.param)
		}
	}
}

func TestModelsHealthAndBadInput(t *testing.T) {
	s := startSim(t, Knobs{})
	resp, err := http.Get("http://" + s.Addr() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Object string
		Data   []struct{ ID, Object string }
	}
	json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if list.Object != "list" || len(list.Data) != len(DefaultModels) || list.Data[0].ID != DefaultModels[0] || list.Data[0].Object != "model" {
		t.Errorf("models %+v", list)
	}
	resp, err = http.Get("http://" + s.Addr() + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz %v %v", resp, err)
	}
	resp.Body.Close()
	for _, tc := range []struct {
		path, body string
		status     int
	}{
		{"/v1/chat/completions", `{`, 400},
		{"/v1/chat/completions", `[]`, 400},
		{"/v1/chat/completions", `{"messages":[]}`, 400},
		{"/v1/chat/completions", `{"model":"m"}`, 400},
		{"/v1/unknown", `{}`, 404},
	} {
		status, _, raw := post(t, s, tc.path, tc.body)
		if status != tc.status || dig(decode(t, string(raw)), "error", "message") == nil {
			t.Errorf("%s %s: %d %s", tc.path, tc.body, status, raw)
		}
	}
	resp, err = http.Get("http://" + s.Addr() + "/v1/chat/completions")
	if err != nil || resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET chat: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
}
