package simulator

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/shared/jsonenc"
)

// chatAnswer is what a chat completion answers: words, a tool call, or a JSON document.
type chatAnswer struct {
	id, callID string
	created    int64
	prompt, n  int // prompt tokens, completion tokens
	finish     string
	seed       uint64
	tool       tool
	isTool     bool
	isJSON     bool
	args, doc  string   // a tool call's arguments; a JSON answer (structured.go)
	frags      []string // the arguments or the JSON answer as streamed, one token each
}

// chat answers POST /v1/chat/completions.
func (s *Server) chat(w http.ResponseWriter, r *http.Request, c *call) {
	msgs := c.root.Get("messages")
	if !msgs.IsArray() || len(msgs.Array()) == 0 {
		c.badRequest("messages", "messages must be a non-empty array")
		return
	}
	a := &chatAnswer{id: s.nextID("chatcmpl-"), created: s.cfg.Now().Unix()}
	lastRole, lastText := "", ""
	msgs.ForEach(func(_, m gjson.Result) bool {
		content := m.Get("content")
		a.prompt += countContent(content)
		lastRole = m.Get("role").Str
		lastText = contentText(content)
		return true
	})
	a.seed = hash64(lastText)
	maxTok := c.root.Get("max_tokens")
	if !maxTok.Exists() {
		maxTok = c.root.Get("max_completion_tokens")
	}
	n, cut := c.outputLimit(maxTok)
	a.n, a.finish = n, "stop"
	if cut {
		a.finish = "length"
	}
	a.tool, a.isTool = c.pickTool(toolsChat, lastRole == "user", lastText)
	switch {
	case a.isTool:
		a.args = buildArgs(a.tool.schema, a.seed)
		a.frags = splitFragments(a.args)
		a.n, a.finish = len(a.frags), "tool_calls"
		a.callID = s.nextID("call_")
	default:
		a.doc, a.isJSON = structuredOf(c.root, a.seed)
	}
	if a.isJSON {
		// A JSON answer streams as its fragments; max_tokens cuts it short.
		a.frags = splitFragments(a.doc)
		a.n, a.finish = len(a.frags), "stop"
		if m := maxTok; m.Type == gjson.Number && int(m.Int()) >= 0 && int(m.Int()) < a.n {
			a.n, a.finish = int(m.Int()), "length"
			a.doc = strings.Join(a.frags[:a.n], "")
		}
	}
	if c.stream {
		c.chatStream(a)
	} else {
		c.chatWhole(a)
	}
}

// chatWhole writes the answer as one chat.completion.
func (c *call) chatWhole(a *chatAnswer) {
	if !c.waitGeneration(a.n) {
		return
	}
	b := make([]byte, 0, 320+a.n*10+len(a.args)+len(a.doc))
	b = chatHead(b, a.id, "chat.completion", a.created, c.model)
	b = append(b, `"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	switch {
	case a.isTool:
		b = append(b, `null,"tool_calls":[{"id":`...)
		b = jsonenc.AppendString(b, a.callID)
		b = append(b, `,"type":"function","function":{"name":`...)
		b = jsonenc.AppendString(b, a.tool.name)
		b = append(b, `,"arguments":`...)
		b = jsonenc.AppendString(b, a.args)
		b = append(b, `}}]`...)
	case a.isJSON:
		b = jsonenc.AppendString(b, a.doc)
	default:
		b = append(b, '"')
		b = appendWords(b, a.seed, a.n)
		b = append(b, '"')
	}
	b = append(b, `},"logprobs":null,"finish_reason":"`...)
	b = append(b, a.finish...)
	b = append(b, `"}],`...)
	b = c.appendUsageOpenAI(b, a.prompt, a.n)
	b = append(b, "}\n"...)
	c.writeJSON(b)
}

// chatStream streams the answer as chat.completion.chunk events.
func (c *call) chatStream(a *chatAnswer) {
	e := c.startStream()
	if e == nil {
		return
	}
	b := make([]byte, 0, 256)
	chunk := func(delta func([]byte) []byte, finish string) []byte {
		b = chatHead(b[:0], a.id, "chat.completion.chunk", a.created, c.model)
		b = append(b, `"choices":[{"index":0,"delta":`...)
		b = delta(b)
		b = append(b, `,"logprobs":null,"finish_reason":`...)
		if finish == "" {
			b = append(b, "null"...)
		} else {
			b = append(b, '"')
			b = append(b, finish...)
			b = append(b, '"')
		}
		return append(b, "}]}"...)
	}
	if !e.send("", chunk(a.firstDelta, "")) {
		return
	}
	for i := 0; i < a.n; i++ {
		if !e.pace(i) {
			return
		}
		if !e.send("", chunk(func(b []byte) []byte { return a.delta(b, i) }, "")) {
			return
		}
	}
	if !e.send("", chunk(func(b []byte) []byte { return append(b, "{}"...) }, a.finish)) {
		return
	}
	if c.root.Get("stream_options.include_usage").Type == gjson.True {
		b = chatHead(b[:0], a.id, "chat.completion.chunk", a.created, c.model)
		b = append(b, `"choices":[],`...)
		b = c.appendUsageOpenAI(b, a.prompt, a.n)
		b = append(b, '}')
		if !e.send("", b) {
			return
		}
	}
	if e.send("", []byte("[DONE]")) {
		e.finish()
	}
}

// firstDelta appends the first chunk's delta: the role, and a tool call's name.
func (a *chatAnswer) firstDelta(b []byte) []byte {
	if !a.isTool {
		return append(b, `{"role":"assistant","content":""}`...)
	}
	b = append(b, `{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":`...)
	b = jsonenc.AppendString(b, a.callID)
	b = append(b, `,"type":"function","function":{"name":`...)
	b = jsonenc.AppendString(b, a.tool.name)
	return append(b, `,"arguments":""}}]}`...)
}

// delta appends the i-th token's delta.
func (a *chatAnswer) delta(b []byte, i int) []byte {
	switch {
	case a.isTool:
		b = append(b, `{"tool_calls":[{"index":0,"function":{"arguments":`...)
		b = jsonenc.AppendString(b, a.frags[i])
		return append(b, `}}]}`...)
	case a.isJSON:
		b = append(b, `{"content":`...)
		b = jsonenc.AppendString(b, a.frags[i])
		return append(b, '}')
	}
	b = append(b, `{"content":"`...)
	b = streamPiece(b, a.seed, i)
	return append(b, `"}`...)
}

// chatHead appends `{"id":...,"object":...,"created":...,"model":...,`.
func chatHead(b []byte, id, object string, created int64, model string) []byte {
	b = append(b, `{"id":`...)
	b = jsonenc.AppendString(b, id)
	b = append(b, `,"object":"`...)
	b = append(b, object...)
	b = append(b, `","created":`...)
	b = strconv.AppendInt(b, created, 10)
	b = append(b, `,"model":`...)
	b = jsonenc.AppendString(b, model)
	return append(b, ',')
}

// appendUsageOpenAI appends the answer's usage, with the knobs' overrides.
func (c *call) appendUsageOpenAI(b []byte, prompt, completion int) []byte {
	if c.k.UsagePromptTokens == "" && c.k.UsageCompletionTokens == "" {
		return appendUsageOpenAI(b, prompt, completion)
	}
	c.s.stats.injected.Add(1)
	num := func(b []byte, override string, n int) []byte {
		if override != "" {
			return append(b, override...)
		}
		return strconv.AppendInt(b, int64(n), 10)
	}
	b = append(b, `"usage":{"prompt_tokens":`...)
	b = num(b, c.k.UsagePromptTokens, prompt)
	b = append(b, `,"completion_tokens":`...)
	b = num(b, c.k.UsageCompletionTokens, completion)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+completion), 10)
	return append(b, '}')
}

// appendUsageOpenAI appends `"usage":{...}` in chat/completions shape.
func appendUsageOpenAI(b []byte, prompt, completion int) []byte {
	b = append(b, `"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+completion), 10)
	return append(b, '}')
}
