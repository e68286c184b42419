package simulator

import (
	"net/http"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/shared/jsonenc"
)

// messages answers POST /v1/messages (Messages-style). max_tokens is required. Prompt tokens
// are the words of system and of every message's text, tool_result content included. The
// answer is one text block, or one tool_use block (stop_reason tool_use); max_tokens cuts the
// text with stop_reason max_tokens. Streams: message_start (usage input_tokens, output_tokens
// 1), ping, content_block_start, content_block_delta (text_delta or input_json_delta, one
// token each), content_block_stop, message_delta (stop_reason and final usage), message_stop.
func (s *Server) messages(w http.ResponseWriter, r *http.Request, c *call) {
	msgs := c.root.Get("messages")
	if !msgs.IsArray() || len(msgs.Array()) == 0 {
		c.badRequest("messages", "messages: field required")
		return
	}
	maxTok := c.root.Get("max_tokens")
	if maxTok.Type != gjson.Number || maxTok.Int() < 1 {
		c.badRequest("max_tokens", "max_tokens: field required (integer >= 1)")
		return
	}
	prompt := countContent(c.root.Get("system"))
	lastIsUser, lastText := false, ""
	msgs.ForEach(func(_, m gjson.Result) bool {
		content := m.Get("content")
		prompt += countContent(content)
		lastIsUser = m.Get("role").Str == "user" && !hasBlock(content, "tool_result")
		lastText = contentText(content)
		return true
	})
	seed := hash64(lastText)
	n, cut := c.outputLimit(maxTok)
	stop := "end_turn"
	if cut {
		stop = "max_tokens"
	}
	tl, isTool := c.pickTool(toolsMessages, lastIsUser, lastText)
	var args, toolID string
	var frags []string
	if isTool {
		args = buildArgs(tl.schema, seed)
		frags = splitFragments(args)
		n, stop = len(frags), "tool_use"
		toolID = s.nextID("toolu_")
	}
	id := s.nextID("msg_")
	head := func(b []byte) []byte {
		b = append(b, `{"id":`...)
		b = jsonenc.AppendString(b, id)
		b = append(b, `,"type":"message","role":"assistant","model":`...)
		return jsonenc.AppendString(b, c.model)
	}
	if !c.stream {
		if !c.waitGeneration(n) {
			return
		}
		b := head(make([]byte, 0, 320+n*10+len(args)))
		b = append(b, `,"content":[`...)
		if isTool {
			b = append(b, `{"type":"tool_use","id":`...)
			b = jsonenc.AppendString(b, toolID)
			b = append(b, `,"name":`...)
			b = jsonenc.AppendString(b, tl.name)
			b = append(b, `,"input":`...)
			b = append(b, args...)
			b = append(b, '}')
		} else {
			b = append(b, `{"type":"text","text":"`...)
			b = appendWords(b, seed, n)
			b = append(b, `"}`...)
		}
		b = append(b, `],"stop_reason":"`...)
		b = append(b, stop...)
		b = append(b, `","stop_sequence":null,`...)
		b = appendUsageMessages(b, prompt, n)
		b = append(b, "}\n"...)
		c.writeJSON(b)
		return
	}
	e := c.startStream()
	if e == nil {
		return
	}
	b := make([]byte, 0, 256)
	b = append(b, `{"type":"message_start","message":`...)
	b = head(b)
	b = append(b, `,"content":[],"stop_reason":null,"stop_sequence":null,`...)
	b = appendUsageMessages(b, prompt, 1)
	b = append(b, "}}"...)
	if !e.send("message_start", b) || !e.send("ping", []byte(`{"type":"ping"}`)) {
		return
	}
	b = append(b[:0], `{"type":"content_block_start","index":0,"content_block":`...)
	if isTool {
		b = append(b, `{"type":"tool_use","id":`...)
		b = jsonenc.AppendString(b, toolID)
		b = append(b, `,"name":`...)
		b = jsonenc.AppendString(b, tl.name)
		b = append(b, `,"input":{}}}`...)
	} else {
		b = append(b, `{"type":"text","text":""}}`...)
	}
	if !e.send("content_block_start", b) {
		return
	}
	for i := 0; i < n; i++ {
		if !e.pace(i) {
			return
		}
		b = append(b[:0], `{"type":"content_block_delta","index":0,"delta":`...)
		if isTool {
			b = append(b, `{"type":"input_json_delta","partial_json":`...)
			b = jsonenc.AppendString(b, frags[i])
		} else {
			b = append(b, `{"type":"text_delta","text":"`...)
			b = streamPiece(b, seed, i)
			b = append(b, '"')
		}
		b = append(b, "}}"...)
		if !e.send("content_block_delta", b) {
			return
		}
	}
	if !e.send("content_block_stop", []byte(`{"type":"content_block_stop","index":0}`)) {
		return
	}
	b = append(b[:0], `{"type":"message_delta","delta":{"stop_reason":"`...)
	b = append(b, stop...)
	b = append(b, `","stop_sequence":null},`...)
	b = appendUsageMessages(b, prompt, n)
	b = append(b, '}')
	if !e.send("message_delta", b) {
		return
	}
	if e.send("message_stop", []byte(`{"type":"message_stop"}`)) {
		e.finish()
	}
}

// hasBlock reports whether content is an array holding a block of type typ.
func hasBlock(content gjson.Result, typ string) bool {
	found := false
	if content.IsArray() {
		content.ForEach(func(_, b gjson.Result) bool {
			found = b.Get("type").Str == typ
			return !found
		})
	}
	return found
}

// appendUsageMessages appends `"usage":{"input_tokens":..,"output_tokens":..}`.
func appendUsageMessages(b []byte, input, output int) []byte {
	b = append(b, `"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(input), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(output), 10)
	return append(b, '}')
}
