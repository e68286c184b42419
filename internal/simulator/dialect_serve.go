package simulator

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"
)

// dialectPath splits "/vllm/v1/chat/completions" into the dialect and "/v1/...".
func dialectPath(p string) (dialect, rest string, ok bool) {
	if len(p) < 2 || p[0] != '/' {
		return "", "", false
	}
	d, rest, found := strings.Cut(p[1:], "/")
	if !found {
		return "", "", false
	}
	if _, known := specs[d]; !known {
		return "", "", false
	}
	return d, "/" + rest, true
}

// serveDialect answers a request under a dialect's path prefix.
func (s *Server) serveDialect(w http.ResponseWriter, r *http.Request, d, path string) {
	switch path {
	case "/v1/models":
		s.stats.count(pathModels)
		s.dialectModels(w, d)
	case "/v1/chat/completions":
		s.stats.count(pathChat)
		if r.Method != http.MethodPost {
			writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method not allowed", false)
			return
		}
		s.dialectChat(w, r, d)
	default:
		s.stats.count(pathOther)
		writeError(w, http.StatusNotFound, "not_found_error", "unknown path "+path, false)
	}
}

// dialectModels lists the models as the server does: vLLM and SGLang with max_model_len,
// llama.cpp with meta.n_ctx_train.
func (s *Server) dialectModels(w http.ResponseWriter, d string) {
	var data []json.RawMessage
	for _, m := range s.cfg.Models {
		owner := d
		switch d {
		case DialectTGI:
			owner = m // TGI names the model as its owner
		case DialectOllama:
			owner = "library"
		case DialectOpenAI:
			owner = "system"
		}
		kv := []any{"id", m, "object", "model", "created", 0, "owned_by", owner}
		switch d {
		case DialectVLLM, DialectSGLang:
			kv = append(kv, "max_model_len", DialectContext)
		case DialectLlamaCpp:
			kv = append(kv, "meta", obj("n_ctx_train", DialectContext))
		}
		data = append(data, obj(kv...))
	}
	w.Header()["Content-Type"] = ctJSON
	_, _ = w.Write(obj("object", "list", "data", data))
}

// obj encodes key, value pairs as a JSON object in that order (nil is null).
func obj(kv ...any) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(kv[i])
		v, _ := json.Marshal(kv[i+1])
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// dialectCall is one chat request to a dialect simulator.
type dialectCall struct {
	d              string
	sp             dialectSpec
	id, model      string
	created        int64
	prompt         int // prompt tokens
	scenario, stop string
	usage          bool // include_usage
	running        bool // continuous_usage_stats
	reasoning      []string
	text           []string
	completion     int
}

func (s *Server) dialectChat(w http.ResponseWriter, r *http.Request, d string) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil || !gjson.ValidBytes(body) {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid JSON body", false)
		return
	}
	req := gjson.ParseBytes(body)
	c := &dialectCall{d: d, sp: specs[d], id: s.nextID("chatcmpl-"), model: req.Get("model").Str,
		created: s.cfg.Now().Unix(), usage: req.Get("stream_options.include_usage").Bool(),
		running: req.Get("stream_options.continuous_usage_stats").Bool()}
	var last string
	req.Get("messages").ForEach(func(_, m gjson.Result) bool {
		c.prompt += countContent(m.Get("content"))
		if m.Get("role").Str == "user" {
			last = contentText(m.Get("content"))
		}
		return true
	})
	c.scenario = scenarioOf(last)
	switch {
	case c.prompt > DialectContext:
		c.scenario = ScenarioOverflow
	case req.Get("tool_choice").Str == "required" && req.Get("tools.0").Exists():
		c.scenario = ScenarioTool
	}
	switch st := req.Get("stop"); {
	case st.Type == gjson.String:
		c.stop = st.Str
	case st.IsArray() && st.Get("0").Type == gjson.String:
		c.stop = st.Get("0").Str
	}
	if c.stop == "" {
		c.stop = DialectDefaultStop
	}
	thinkOff := req.Get("chat_template_kwargs.enable_thinking").Type == gjson.False
	if c.scenario == ScenarioReasoning && c.sp.reasoning != "" && !thinkOff {
		c.reasoning = pieces(DialectReasoning(last))
	}
	if c.scenario != ScenarioTool {
		c.text = pieces(DialectText(last))
	}
	c.completion = len(c.reasoning) + len(c.text)
	if c.scenario == ScenarioTool {
		c.completion = len(DialectToolFragments)
	}
	stream := req.Get("stream").Bool()
	switch {
	case c.scenario == ScenarioOverflow && stream && c.sp.streamOverflow != "":
		w.Header()["Content-Type"] = ctSSE
		_, _ = io.WriteString(w, c.sp.streamOverflow+"\n\n")
	case c.scenario == ScenarioOverflow:
		st := c.sp.overflowStatus
		if st == 0 {
			st = http.StatusBadRequest
		}
		w.Header()["Content-Type"] = ctJSON
		w.WriteHeader(st)
		_, _ = io.WriteString(w, c.sp.overflowBody)
	case c.scenario == ScenarioError && !stream:
		w.Header()["Content-Type"] = ctJSON
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, c.sp.errorBody)
	case stream:
		c.stream(w)
	default:
		w.Header()["Content-Type"] = ctJSON
		_, _ = w.Write(c.whole())
	}
}

// pieces splits generated text into its streamed pieces: words, each after the first
// with its leading space.
func pieces(text string) []string {
	ws := strings.Fields(text)
	for i := 1; i < len(ws); i++ {
		ws[i] = " " + ws[i]
	}
	return ws
}

// usageObj is the usage of n completion tokens.
func (c *dialectCall) usageObj(n int) json.RawMessage {
	kv := []any{"prompt_tokens", c.prompt, "completion_tokens", n, "total_tokens", c.prompt + n}
	if c.scenario == ScenarioCached {
		kv = append(kv, "prompt_tokens_details", obj("cached_tokens", DialectCached))
	}
	if c.d == DialectOpenAI && len(c.reasoning) > 0 {
		kv = append(kv, "completion_tokens_details", obj("reasoning_tokens", len(c.reasoning)))
	}
	return obj(kv...)
}

// finish is the answer's finish_reason and the stop member's value.
func (c *dialectCall) finish() (reason string, stopValue any) {
	switch c.scenario {
	case ScenarioTool:
		return "tool_calls", nil
	case ScenarioStop:
		return c.sp.stopFinish, c.stop
	}
	if c.d == DialectSGLang {
		return "stop", 151645 // the end-of-sequence token's ID: a number, not a sequence
	}
	return "stop", nil
}

func (c *dialectCall) toolCall(args string, head bool) json.RawMessage {
	if !head {
		return obj("index", 0, "function", obj("arguments", args))
	}
	return obj("index", 0, "id", "call_"+c.id[len("chatcmpl-"):], "type", "function",
		"function", obj("name", DialectToolName, "arguments", args))
}

// whole is the non-streamed answer.
func (c *dialectCall) whole() []byte {
	msg := []any{"role", "assistant"}
	var content any
	if len(c.text) > 0 {
		content = strings.Join(c.text, "")
	}
	msg = append(msg, "content", content)
	if c.sp.reasoning != "" && (len(c.reasoning) > 0 || c.sp.nulls) {
		var r any
		if len(c.reasoning) > 0 {
			r = strings.Join(c.reasoning, "")
		}
		msg = append(msg, c.sp.reasoning, r)
	}
	switch {
	case c.scenario == ScenarioTool:
		msg = append(msg, "tool_calls", []json.RawMessage{c.toolCall(DialectToolArgs, true)})
	case c.sp.nulls:
		msg = append(msg, "tool_calls", nil)
	}
	reason, stopValue := c.finish()
	choice := []any{"index", 0, "message", obj(msg...), "logprobs", nil, "finish_reason", reason}
	if c.sp.stopField != "" {
		choice = append(choice, c.sp.stopField, stopValue)
	}
	kv := []any{"id", c.id, "object", "chat.completion", "created", c.created, "model", c.model}
	if c.sp.fingerprint != "" {
		kv = append(kv, "system_fingerprint", c.sp.fingerprint)
	}
	kv = append(kv, "choices", []json.RawMessage{obj(choice...)}, "usage", c.usageObj(c.completion))
	return obj(kv...)
}

// chunk is one streamed chunk with delta members (in order); n is the completion tokens
// so far (running usage).
func (c *dialectCall) chunk(delta []any, reason, stopValue any, n int) []byte {
	if c.sp.nulls {
		delta = nullsFilled(delta)
	}
	choice := []any{"index", 0, "delta", obj(delta...), "logprobs", nil, "finish_reason", reason}
	if c.sp.stopField != "" {
		choice = append(choice, c.sp.stopField, stopValue)
	}
	kv := []any{"id", c.id, "object", "chat.completion.chunk", "created", c.created, "model", c.model}
	if c.sp.fingerprint != "" {
		kv = append(kv, "system_fingerprint", c.sp.fingerprint)
	}
	kv = append(kv, "choices", []json.RawMessage{obj(choice...)})
	switch {
	case c.running:
		kv = append(kv, "usage", c.usageObj(n))
	case c.sp.nulls:
		kv = append(kv, "usage", nil)
	}
	return obj(kv...)
}

// nullsFilled adds SGLang's null members to a delta.
func nullsFilled(delta []any) []any {
	has := map[string]bool{}
	for i := 0; i < len(delta); i += 2 {
		has[delta[i].(string)] = true
	}
	for _, k := range []string{"role", "content", "reasoning_content", "tool_calls"} {
		if !has[k] {
			delta = append(delta, k, nil)
		}
	}
	return delta
}

// stream writes the streamed answer.
func (c *dialectCall) stream(w http.ResponseWriter) {
	w.Header()["Content-Type"] = ctSSE
	w.Header()["Cache-Control"] = noCache
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	eol := "\n"
	if c.scenario == ScenarioSSE {
		eol = "\r\n"
		_, _ = io.WriteString(w, ": keep-alive"+eol+eol)
	}
	var events [][]byte
	add := func(data []byte) { events = append(events, data) }
	n := 0
	add(c.chunk([]any{"role", "assistant", "content", ""}, nil, nil, n))
	for _, p := range c.reasoning {
		n++
		add(c.chunk([]any{c.sp.reasoning, p}, nil, nil, n))
	}
	for i, p := range c.text {
		if (c.scenario == ScenarioError || c.scenario == ScenarioCut) && i == 2 {
			break
		}
		n++
		add(c.chunk([]any{"content", p}, nil, nil, n))
	}
	if c.scenario == ScenarioTool {
		for i, f := range DialectToolFragments {
			n++
			add(c.chunk([]any{"tool_calls", []json.RawMessage{c.toolCall(f, i == 0)}}, nil, nil, n))
		}
	}
	write := func(b string) bool {
		if _, err := io.WriteString(w, b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	held := "" // frames held back to go out in one write with the next
	for i, e := range events {
		frame := held + c.sp.dataPrefix + string(e) + eol + eol
		held = ""
		switch {
		case c.scenario == ScenarioSSE && i == 1:
			// One event in two writes, then an empty data frame (as relays send).
			h := len(frame) / 2
			if !write(frame[:h]) || !write(frame[h:]+"data: "+eol+eol) {
				return
			}
		case c.scenario == ScenarioSSE && i == 2 && i+1 < len(events):
			held = frame // two events in one write
		default:
			if !write(frame) {
				return
			}
		}
	}
	if held != "" && !write(held) {
		return
	}
	switch c.scenario {
	case ScenarioError:
		if write(c.sp.streamError+"\n\n") && c.sp.doneAfter {
			write(c.sp.dataPrefix + "[DONE]\n\n")
		}
		return
	case ScenarioCut:
		if c.sp.cutWithEmpty {
			write(c.sp.dataPrefix + string(c.chunk([]any{"content", ""}, nil, nil, n)) + "\n\n")
		}
		return
	}
	reason, stopValue := c.finish()
	last := c.chunk([]any{}, reason, stopValue, n)
	out := c.sp.dataPrefix + string(last) + eol + eol
	if c.usage {
		u := []any{"id", c.id, "object", "chat.completion.chunk", "created", c.created, "model", c.model,
			"choices", []json.RawMessage{}, "usage", c.usageObj(n)}
		if c.d == DialectLlamaCpp {
			u = append(u, "timings", obj("prompt_n", c.prompt, "predicted_n", n))
		}
		out += c.sp.dataPrefix + string(obj(u...)) + eol + eol
	}
	done := c.sp.dataPrefix + "[DONE]" + eol + eol
	if c.scenario == ScenarioSSE {
		done = c.sp.dataPrefix + "[DONE]" + eol // the connection closes before the blank line
	}
	write(out + done)
}

// DialectBaseURL is the base URL of a route in dialect d on simulator s.
func (s *Server) DialectBaseURL(d string) string { return "http://" + s.Addr() + "/" + d + "/v1" }
