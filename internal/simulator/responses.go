package simulator

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/shared/jsonenc"
)

// respState is what a Responses-style answer is built from.
type respState struct {
	id, model, msgID, callID, fcID string
	created                        int64
	seed                           uint64
	n, prompt                      int
	cut                            bool
	tool                           tool
	isTool                         bool
	args                           string
	isJSON                         bool     // text.format asks for JSON (structured.go)
	doc                            string   // the JSON answer
	docFrags                       []string // doc as streamed, one token each
}

// appendText appends the message's text as a JSON string.
func (st *respState) appendText(b []byte) []byte {
	if st.isJSON {
		return jsonenc.AppendString(b, st.doc)
	}
	b = append(b, '"')
	b = appendWords(b, st.seed, st.n)
	return append(b, '"')
}

// appendPiece appends the text's i-th streamed piece as a JSON string.
func (st *respState) appendPiece(b []byte, i int) []byte {
	if st.isJSON {
		return jsonenc.AppendString(b, st.docFrags[i])
	}
	b = append(b, '"')
	b = streamPiece(b, st.seed, i)
	return append(b, '"')
}

// responses answers POST /v1/responses (stateless): input is a string or an array of items
// (messages with string or part content, function_call_output items); instructions count as
// prompt. The answer is one message item with one output_text part, or one function_call
// item; max_output_tokens cuts the text and makes the status "incomplete" (reason
// max_output_tokens).
func (s *Server) responses(w http.ResponseWriter, r *http.Request, c *call) {
	in := c.root.Get("input")
	st := respState{model: c.model, created: s.cfg.Now().Unix()}
	lastIsUser, lastText := false, ""
	switch {
	case in.Type == gjson.String:
		st.prompt = CountTokens(in.Str)
		lastIsUser, lastText = true, in.Str
	case in.IsArray():
		in.ForEach(func(_, it gjson.Result) bool {
			typ := it.Get("type").Str
			switch {
			case typ == "function_call_output":
				st.prompt += countContent(it.Get("output"))
				lastIsUser, lastText = false, ""
			case typ == "function_call":
				lastIsUser, lastText = false, ""
			case typ == "message" || typ == "" && it.Get("role").Exists():
				content := it.Get("content")
				st.prompt += countContent(content)
				lastIsUser, lastText = it.Get("role").Str == "user", contentText(content)
			}
			return true
		})
	default:
		c.badRequest("input", "input must be a string or an array of items")
		return
	}
	if ins := c.root.Get("instructions"); ins.Type == gjson.String {
		st.prompt += CountTokens(ins.Str)
	}
	st.seed = hash64(lastText)
	st.n, st.cut = c.outputLimit(c.root.Get("max_output_tokens"))
	st.tool, st.isTool = c.pickTool(toolsResponses, lastIsUser, lastText)
	var frags []string
	if st.isTool {
		st.args = buildArgs(st.tool.schema, st.seed)
		frags = splitFragments(st.args)
		st.n, st.cut = len(frags), false
		st.fcID, st.callID = s.nextID("fc_"), s.nextID("call_")
	} else {
		st.msgID = s.nextID("msg_")
		st.jsonText(c.root)
	}
	st.id = s.nextID("resp_")

	if !c.stream {
		if !c.waitGeneration(st.n) {
			return
		}
		b := st.appendResponse(make([]byte, 0, 512+st.n*10), true)
		c.writeJSON(append(b, '\n'))
		return
	}
	e := c.startStream()
	if e == nil {
		return
	}
	seq := 0
	var b []byte
	ev := func(typ string, body func([]byte) []byte) bool {
		b = append(b[:0], `{"type":"`...)
		b = append(b, typ...)
		b = append(b, `","sequence_number":`...)
		b = strconv.AppendInt(b, int64(seq), 10)
		seq++
		b = body(append(b, ','))
		b = append(b, '}')
		return e.send(typ, b)
	}
	inProgress := func(b []byte) []byte {
		b = append(b, `"response":`...)
		return st.appendResponse(b, false)
	}
	if !ev("response.created", inProgress) || !ev("response.in_progress", inProgress) {
		return
	}
	if !ev("response.output_item.added", func(b []byte) []byte {
		b = append(b, `"output_index":0,"item":`...)
		return st.appendItem(b, false)
	}) {
		return
	}
	itemRef := func(b []byte, id string) []byte {
		b = append(b, `"item_id":`...)
		b = jsonenc.AppendString(b, id)
		return append(b, `,"output_index":0`...)
	}
	if st.isTool {
		for i, f := range frags {
			if !e.pace(i) {
				return
			}
			if !ev("response.function_call_arguments.delta", func(b []byte) []byte {
				b = itemRef(b, st.fcID)
				b = append(b, `,"delta":`...)
				return jsonenc.AppendString(b, f)
			}) {
				return
			}
		}
		if !ev("response.function_call_arguments.done", func(b []byte) []byte {
			b = itemRef(b, st.fcID)
			b = append(b, `,"name":`...)
			b = jsonenc.AppendString(b, st.tool.name)
			b = append(b, `,"arguments":`...)
			return jsonenc.AppendString(b, st.args)
		}) {
			return
		}
	} else {
		part := func(b []byte, full bool) []byte {
			b = itemRef(b, st.msgID)
			b = append(b, `,"content_index":0,"part":{"type":"output_text","text":`...)
			if full {
				b = st.appendText(b)
			} else {
				b = append(b, `""`...)
			}
			return append(b, `,"annotations":[]}`...)
		}
		if !ev("response.content_part.added", func(b []byte) []byte { return part(b, false) }) {
			return
		}
		for i := 0; i < st.n; i++ {
			if !e.pace(i) {
				return
			}
			if !ev("response.output_text.delta", func(b []byte) []byte {
				b = itemRef(b, st.msgID)
				b = append(b, `,"content_index":0,"delta":`...)
				b = st.appendPiece(b, i)
				return append(b, `,"logprobs":[]`...)
			}) {
				return
			}
		}
		if !ev("response.output_text.done", func(b []byte) []byte {
			b = itemRef(b, st.msgID)
			b = append(b, `,"content_index":0,"text":`...)
			b = st.appendText(b)
			return append(b, `,"logprobs":[]`...)
		}) {
			return
		}
		if !ev("response.content_part.done", func(b []byte) []byte { return part(b, true) }) {
			return
		}
	}
	if !ev("response.output_item.done", func(b []byte) []byte {
		b = append(b, `"output_index":0,"item":`...)
		return st.appendItem(b, true)
	}) {
		return
	}
	terminal := "response.completed"
	if st.cut {
		terminal = "response.incomplete"
	}
	if ev(terminal, func(b []byte) []byte {
		b = append(b, `"response":`...)
		return st.appendResponse(b, true)
	}) {
		e.finish()
	}
}

// appendResponse appends the response object; done selects the final state (output and
// usage) over the in-progress one.
func (st *respState) appendResponse(b []byte, done bool) []byte {
	status := "in_progress"
	if done {
		status = "completed"
		if st.cut {
			status = "incomplete"
		}
	}
	b = append(b, `{"id":`...)
	b = jsonenc.AppendString(b, st.id)
	b = append(b, `,"object":"response","created_at":`...)
	b = strconv.AppendInt(b, st.created, 10)
	b = append(b, `,"status":"`...)
	b = append(b, status...)
	b = append(b, `","error":null,"incomplete_details":`...)
	if done && st.cut {
		b = append(b, `{"reason":"max_output_tokens"}`...)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"model":`...)
	b = jsonenc.AppendString(b, st.model)
	b = append(b, `,"output":[`...)
	if done {
		b = st.appendItem(b, true)
	}
	b = append(b, `],"parallel_tool_calls":true,"tool_choice":"auto","tools":[],"store":false,"usage":`...)
	if !done {
		return append(b, "null}"...)
	}
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(st.prompt), 10)
	b = append(b, `,"input_tokens_details":{"cached_tokens":0},"output_tokens":`...)
	b = strconv.AppendInt(b, int64(st.n), 10)
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":`...)
	b = strconv.AppendInt(b, int64(st.prompt+st.n), 10)
	return append(b, "}}"...)
}

// appendItem appends the output item, complete or as first announced.
func (st *respState) appendItem(b []byte, done bool) []byte {
	status := "in_progress"
	if done {
		status = "completed"
		if st.cut {
			status = "incomplete"
		}
	}
	if st.isTool {
		b = append(b, `{"type":"function_call","id":`...)
		b = jsonenc.AppendString(b, st.fcID)
		b = append(b, `,"call_id":`...)
		b = jsonenc.AppendString(b, st.callID)
		b = append(b, `,"name":`...)
		b = jsonenc.AppendString(b, st.tool.name)
		b = append(b, `,"arguments":`...)
		if done {
			b = jsonenc.AppendString(b, st.args)
		} else {
			b = append(b, `""`...)
		}
		b = append(b, `,"status":"`...)
		b = append(b, status...)
		return append(b, `"}`...)
	}
	b = append(b, `{"type":"message","id":`...)
	b = jsonenc.AppendString(b, st.msgID)
	b = append(b, `,"status":"`...)
	b = append(b, status...)
	b = append(b, `","role":"assistant","content":[`...)
	if done {
		b = append(b, `{"type":"output_text","text":`...)
		b = st.appendText(b)
		b = append(b, `,"annotations":[]}`...)
	}
	return append(b, "]}"...)
}

// jsonText makes the answer the JSON document text.format asks for, if it asks: its
// tokens are the document's fragments, max_output_tokens cuts them short.
func (st *respState) jsonText(root gjson.Result) {
	st.doc, st.isJSON = structuredOf(root, st.seed)
	if !st.isJSON {
		return
	}
	st.docFrags = splitFragments(st.doc)
	st.n, st.cut = len(st.docFrags), false
	if maxTok := root.Get("max_output_tokens"); maxTok.Type == gjson.Number && int(maxTok.Int()) >= 0 && int(maxTok.Int()) < st.n {
		st.n, st.cut = int(maxTok.Int()), true
		st.doc = strings.Join(st.docFrags[:st.n], "")
	}
}
