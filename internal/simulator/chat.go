package simulator

import (
	"net/http"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/shared/jsonenc"
)

// chat answers POST /v1/chat/completions.
func (s *Server) chat(w http.ResponseWriter, r *http.Request, c *call) {
	msgs := c.root.Get("messages")
	if !msgs.IsArray() || len(msgs.Array()) == 0 {
		c.badRequest("messages", "messages must be a non-empty array")
		return
	}
	prompt, lastRole, lastText := 0, "", ""
	msgs.ForEach(func(_, m gjson.Result) bool {
		content := m.Get("content")
		prompt += countContent(content)
		lastRole = m.Get("role").Str
		lastText = contentText(content)
		return true
	})
	seed := hash64(lastText)
	maxTok := c.root.Get("max_tokens")
	if !maxTok.Exists() {
		maxTok = c.root.Get("max_completion_tokens")
	}
	n, cut := c.outputLimit(maxTok)
	finish := "stop"
	if cut {
		finish = "length"
	}
	tl, isTool := c.pickTool(toolsChat, lastRole == "user", lastText)
	var args string
	var frags []string
	if isTool {
		args = buildArgs(tl.schema, seed)
		frags = splitFragments(args)
		n, finish = len(frags), "tool_calls"
	}
	id := s.nextID("chatcmpl-")
	created := s.cfg.Now().Unix()
	callID := ""
	if isTool {
		callID = s.nextID("call_")
	}
	if !c.stream {
		if !c.waitGeneration(n) {
			return
		}
		b := make([]byte, 0, 320+n*10+len(args))
		b = chatHead(b, id, "chat.completion", created, c.model)
		b = append(b, `"choices":[{"index":0,"message":{"role":"assistant","content":`...)
		if isTool {
			b = append(b, `null,"tool_calls":[{"id":`...)
			b = jsonenc.AppendString(b, callID)
			b = append(b, `,"type":"function","function":{"name":`...)
			b = jsonenc.AppendString(b, tl.name)
			b = append(b, `,"arguments":`...)
			b = jsonenc.AppendString(b, args)
			b = append(b, `}}]`...)
		} else {
			b = append(b, '"')
			b = appendWords(b, seed, n)
			b = append(b, '"')
		}
		b = append(b, `},"logprobs":null,"finish_reason":"`...)
		b = append(b, finish...)
		b = append(b, `"}],`...)
		b = c.appendUsageOpenAI(b, prompt, n)
		b = append(b, "}\n"...)
		c.writeJSON(b)
		return
	}

	e := c.startStream()
	if e == nil {
		return
	}
	b := make([]byte, 0, 256)
	chunk := func(delta func([]byte) []byte, finish string) []byte {
		b = chatHead(b[:0], id, "chat.completion.chunk", created, c.model)
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
	if isTool {
		if !e.send("", chunk(func(b []byte) []byte {
			b = append(b, `{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":`...)
			b = jsonenc.AppendString(b, callID)
			b = append(b, `,"type":"function","function":{"name":`...)
			b = jsonenc.AppendString(b, tl.name)
			return append(b, `,"arguments":""}}]}`...)
		}, "")) {
			return
		}
		for i, f := range frags {
			if !e.pace(i) {
				return
			}
			if !e.send("", chunk(func(b []byte) []byte {
				b = append(b, `{"tool_calls":[{"index":0,"function":{"arguments":`...)
				b = jsonenc.AppendString(b, f)
				return append(b, `}}]}`...)
			}, "")) {
				return
			}
		}
	} else {
		if !e.send("", chunk(func(b []byte) []byte { return append(b, `{"role":"assistant","content":""}`...) }, "")) {
			return
		}
		for i := 0; i < n; i++ {
			if !e.pace(i) {
				return
			}
			if !e.send("", chunk(func(b []byte) []byte {
				b = append(b, `{"content":"`...)
				b = streamPiece(b, seed, i)
				return append(b, `"}`...)
			}, "")) {
				return
			}
		}
	}
	if !e.send("", chunk(func(b []byte) []byte { return append(b, "{}"...) }, finish)) {
		return
	}
	if c.root.Get("stream_options.include_usage").Type == gjson.True {
		b = chatHead(b[:0], id, "chat.completion.chunk", created, c.model)
		b = append(b, `"choices":[],`...)
		b = c.appendUsageOpenAI(b, prompt, n)
		b = append(b, '}')
		if !e.send("", b) {
			return
		}
	}
	if e.send("", []byte("[DONE]")) {
		e.finish()
	}
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
