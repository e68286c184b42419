package translate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/sse"
	"github.com/sekgate/gateway/shared/jsonenc"
)

// ChatToResponsesStream turns a streamed chat completion into Responses-style events. Feed
// it each chat SSE data payload in order, then call Finish on "data: [DONE]"; when the
// upstream ends without [DONE], do not call Finish (the client then gets no terminal event
// and knows the output is incomplete). Every event carries a sequence_number from 0.
//
// Events: response.created and response.in_progress (on the first chunk); for reasoning,
// response.output_item.added (a reasoning item), response.content_part.added (a
// reasoning_text part), response.reasoning_text.delta..., response.reasoning_text.done,
// response.content_part.done, response.output_item.done; for text,
// response.output_item.added (a message item), response.content_part.added,
// response.output_text.delta..., response.output_text.done, response.content_part.done,
// response.output_item.done; for each tool call (by chat index), response.output_item.added
// (a function_call item, once its name is known), response.function_call_arguments.delta
// (the upstream's fragments, unchanged and in order), response.function_call_arguments.done,
// response.output_item.done. An item is closed when another starts; a fragment for a closed
// call is an ErrUpstream error. On Finish: response.completed with the whole response and
// usage, or, when finish_reason was length (content_filter), response.incomplete with
// incomplete_details.reason max_output_tokens (content_filter). An error object inside the
// upstream stream produces response.failed and an ErrUpstream error.
//
// Not safe for concurrent use.
type ChatToResponsesStream struct {
	model string
	w     func(event, data []byte) error

	seq      int64
	started  bool
	finished bool
	failed   bool
	errSent  bool // response.failed was written
	suffix   string
	created  int64
	items    []*respItem
	open     int               // index in items of the open item, -1 when none
	tools    map[int]*respTool // current call per chat tool index
	order    []*respTool       // every call, by first appearance
	finish   string
	stopSeq  string
	usage    Usage
	cached   int64
	reason   int64
	thought  int64 // reasoning deltas received (reasoning_tokens when the server reports none)
	opt      Options
	out      []byte // the data of the last delta event, reused
}

type respItem struct {
	call   bool
	think  bool // a reasoning item
	id     string
	callID string
	name   string
	buf    strings.Builder // text, or arguments
	status string
}

type respTool struct {
	n       int // position among the answer's tool calls
	item    int // index in items, -1 until started
	callID  string
	name    string
	pending []string // argument fragments received before the name
	closed  bool
}

// NewChatToResponsesStream returns a translator writing each event through w; model is the
// name the client asked for.
func NewChatToResponsesStream(model string, w func(event, data []byte) error) *ChatToResponsesStream {
	return &ChatToResponsesStream{model: model, w: w, open: -1, tools: map[int]*respTool{}}
}

// Usage returns the usage reported so far (zero until the upstream's usage chunk).
func (s *ChatToResponsesStream) Usage() Usage { return s.usage }

// Configure sets the translation's options (before the first Feed).
func (s *ChatToResponsesStream) Configure(o Options) *ChatToResponsesStream { s.opt = o; return s }

func (s *ChatToResponsesStream) emit(event string, v any) error {
	b, err := marshal(v)
	if err != nil {
		return err
	}
	s.seq++
	return s.w([]byte(event), b)
}

// Feed translates one chat completion chunk (the data of one SSE event, without "data: ").
func (s *ChatToResponsesStream) Feed(chunk []byte) error {
	if s.finished || s.failed {
		return fmt.Errorf("%w: chunk after the end of the stream", ErrUpstream)
	}
	root, ok := parseChunk(chunk)
	if !ok {
		s.failed = true
		return fmt.Errorf("%w: stream chunk is not a JSON object", ErrUpstream)
	}
	m := readChunk(root)
	if e := m.err; given(e) {
		msg := e.Get("message").Str
		if e.Type == gjson.String {
			msg = e.Str
		}
		if err := s.Fail(msg); err != nil {
			return err
		}
		return fmt.Errorf("%w: error in stream: %s", ErrUpstream, msg)
	}
	if err := s.start(root); err != nil {
		return err
	}
	if u := m.usage; u.IsObject() {
		if bu, ok := usageFromChat(u); ok {
			s.usage = bu
			s.cached = detailCount(u.Get("prompt_tokens_details.cached_tokens"))
			s.reason = detailCount(u.Get("completion_tokens_details.reasoning_tokens"))
		}
	}
	err := firstChoice(m.choices, &s.opt, s.choice)
	if err != nil {
		s.failed = true
	}
	return err
}

// Fail ends the stream with response.failed carrying msg (the upstream reported an error,
// its stream broke, or a chunk could not be translated); after Finish it does nothing.
func (s *ChatToResponsesStream) Fail(msg string) error {
	if s.finished || s.errSent {
		return nil
	}
	s.failed, s.errSent = true, true
	if msg == "" {
		msg = "upstream error"
	}
	if !s.started {
		s.suffix, s.created = idSuffix(""), created(gjson.Result{})
	}
	r := s.response("failed", nil)
	r.Error = map[string]string{"code": "server_error", "message": msg}
	return s.emit(sse.ResponseFailed, evResponse{Type: sse.ResponseFailed, SequenceNumber: s.seq, Response: r})
}

// response renders the response object in its current state.
func (s *ChatToResponsesStream) response(status string, details *incompleteDetails) responseObject {
	r := responseObject{ID: "resp_" + s.suffix, Object: "response", CreatedAt: s.created, Status: status,
		IncompleteDetails: details, Model: s.model, Output: []any{}}
	for _, it := range s.items {
		r.Output = append(r.Output, it.render())
	}
	if status != "in_progress" {
		reason := s.reason
		if reason == 0 {
			reason = min(s.thought, s.usage.OutputTokens)
		}
		r.Usage = &responseUsage{InputTokens: s.usage.InputTokens, InputTokensDetails: cachedTokens{s.cached},
			OutputTokens: s.usage.OutputTokens, OutputTokensDetails: reasoningTokensObj{reason}, TotalTokens: s.usage.Total()}
	}
	return r
}

func (it *respItem) render() any {
	if it.think {
		content := []reasoningText{}
		if it.status != "in_progress" {
			content = append(content, reasoningText{Type: "reasoning_text", Text: it.buf.String()})
		}
		return reasoningItem{ID: it.id, Type: "reasoning", Summary: []any{}, Content: content, Status: it.status}
	}
	if it.call {
		return functionCallItem{ID: it.id, Type: "function_call", Status: it.status, CallID: it.callID,
			Name: it.name, Arguments: it.buf.String()}
	}
	content := []outputText{}
	if it.status != "in_progress" {
		content = append(content, newOutputText(it.buf.String()))
	}
	return messageItem{ID: it.id, Type: "message", Status: it.status, Role: "assistant", Content: content}
}

func (s *ChatToResponsesStream) start(root gjson.Result) error {
	if s.started {
		return nil
	}
	s.started = true
	s.suffix, s.created = strings.Clone(idSuffix(root.Get("id").Str)), created(root)
	r := s.response("in_progress", nil)
	if err := s.emit("response.created", evResponse{Type: "response.created", SequenceNumber: s.seq, Response: r}); err != nil {
		return err
	}
	return s.emit("response.in_progress", evResponse{Type: "response.in_progress", SequenceNumber: s.seq, Response: r})
}

func (s *ChatToResponsesStream) choice(c choiceMembers) error {
	finish, stop, ok, err := feedChoice(c, s)
	if ok {
		s.finish, s.stopSeq = finish, stop
	}
	return err
}

func (s *ChatToResponsesStream) reasoning(t string) error {
	if s.open < 0 || !s.items[s.open].think {
		if err := s.closeOpen("completed"); err != nil {
			return err
		}
		n := len(s.items)
		it := &respItem{think: true, id: "rs_" + s.suffix + "_" + strconv.Itoa(n), status: "in_progress"}
		s.items = append(s.items, it)
		s.open = n
		if err := s.emit("response.output_item.added", evItem{Type: "response.output_item.added",
			SequenceNumber: s.seq, OutputIndex: n, Item: it.render()}); err != nil {
			return err
		}
		// The SDKs' stream helpers append each delta to the content part it names: the
		// part must be announced before the first delta.
		if err := s.emit("response.content_part.added", evPart{Type: "response.content_part.added",
			SequenceNumber: s.seq, ItemID: it.id, OutputIndex: n, Part: reasoningText{Type: "reasoning_text"}}); err != nil {
			return err
		}
	}
	it := s.items[s.open]
	it.buf.WriteString(t)
	s.thought++
	return s.emitReasoningDelta(it.id, t)
}

// emitReasoningDelta writes a response.reasoning_text.delta of the open item.
func (s *ChatToResponsesStream) emitReasoningDelta(item, d string) error {
	b := append(s.out[:0], `{"type":"response.reasoning_text.delta","sequence_number":`...)
	b = strconv.AppendInt(b, s.seq, 10)
	b = append(b, `,"item_id":`...)
	b = jsonenc.AppendString(b, item)
	b = append(b, `,"output_index":`...)
	b = strconv.AppendInt(b, int64(s.open), 10)
	b = append(b, `,"content_index":0,"delta":`...)
	b = jsonenc.AppendString(b, d)
	b = append(b, '}')
	s.out = b
	s.seq++
	return s.w(reasoningTextDelta, b)
}

func (s *ChatToResponsesStream) text(t string) error {
	if s.open < 0 || s.items[s.open].call || s.items[s.open].think {
		if err := s.closeOpen("completed"); err != nil {
			return err
		}
		n := len(s.items)
		it := &respItem{id: "msg_" + s.suffix + "_" + strconv.Itoa(n), status: "in_progress"}
		s.items = append(s.items, it)
		s.open = n
		if err := s.emit("response.output_item.added", evItem{Type: "response.output_item.added",
			SequenceNumber: s.seq, OutputIndex: n, Item: it.render()}); err != nil {
			return err
		}
		if err := s.emit("response.content_part.added", evPart{Type: "response.content_part.added",
			SequenceNumber: s.seq, ItemID: it.id, OutputIndex: n, Part: newOutputText("")}); err != nil {
			return err
		}
	}
	it := s.items[s.open]
	it.buf.WriteString(t)
	return s.emitDelta(true, it.id, t)
}

// The names of the most frequent events, as the writer takes them.
var (
	outputTextDelta = []byte("response.output_text.delta")
	argumentsDelta  = []byte("response.function_call_arguments.delta")
	// reasoningTextDelta carries reasoning text (the Responses protocol's open-weight
	// reasoning form, as gpt-oss servers stream it).
	reasoningTextDelta = []byte("response.reasoning_text.delta")
)

// emitDelta writes a response.output_text.delta (text) or
// response.function_call_arguments.delta event of the open item, whose ID is item, with
// delta d. It encodes the event by hand, into a buffer it reuses, because it is once per
// generated token; the bytes are those marshal makes of evTextDelta and evArgsDelta.
func (s *ChatToResponsesStream) emitDelta(text bool, item, d string) error {
	name := argumentsDelta
	if text {
		name = outputTextDelta
	}
	b := append(s.out[:0], `{"type":"`...)
	b = append(b, name...)
	b = append(b, `","sequence_number":`...)
	b = strconv.AppendInt(b, s.seq, 10)
	b = append(b, `,"item_id":`...)
	b = jsonenc.AppendString(b, item)
	b = append(b, `,"output_index":`...)
	b = strconv.AppendInt(b, int64(s.open), 10)
	if text {
		b = append(b, `,"content_index":0,"delta":`...)
		b = jsonenc.AppendString(b, d)
		b = append(b, `,"logprobs":[]}`...)
	} else {
		b = append(b, `,"delta":`...)
		b = jsonenc.AppendString(b, d)
		b = append(b, '}')
	}
	s.out = b
	s.seq++
	return s.w(name, b)
}

func (s *ChatToResponsesStream) toolDelta(idx int, id, name, args string) error {
	st := s.tools[idx]
	if st == nil || id != "" && st.callID != "" && id != st.callID {
		// A new ID at a known index is a new call (some servers number every call 0):
		// it gets its own item rather than being merged into the previous call.
		st = &respTool{n: len(s.order), item: -1, callID: id}
		s.tools[idx] = st
		s.order = append(s.order, st)
	}
	if st.closed {
		if args != "" {
			return fmt.Errorf("%w: arguments for tool call %d after its item was closed", ErrUpstream, idx)
		}
		return nil
	}
	if st.callID == "" {
		st.callID = id
	}
	if st.item < 0 {
		st.name += name
		if args != "" {
			st.pending = append(st.pending, strings.Clone(args))
		}
		if st.name == "" {
			return nil
		}
		return s.startTool(st)
	}
	return s.argsDelta(args)
}

func (s *ChatToResponsesStream) startTool(st *respTool) error {
	if err := s.closeOpen("completed"); err != nil {
		return err
	}
	n := len(s.items)
	if st.callID == "" {
		st.callID = "call_" + s.suffix + "_" + strconv.Itoa(st.n)
	}
	it := &respItem{call: true, id: "fc_" + s.suffix + "_" + strconv.Itoa(n), callID: st.callID, name: st.name, status: "in_progress"}
	s.items = append(s.items, it)
	st.item, s.open = n, n
	if err := s.emit("response.output_item.added", evItem{Type: "response.output_item.added",
		SequenceNumber: s.seq, OutputIndex: n, Item: it.render()}); err != nil {
		return err
	}
	p := st.pending
	st.pending = nil
	for _, frag := range p {
		if err := s.argsDelta(frag); err != nil {
			return err
		}
	}
	return nil
}

func (s *ChatToResponsesStream) argsDelta(args string) error {
	if args == "" {
		return nil
	}
	it := s.items[s.open]
	it.buf.WriteString(args)
	return s.emitDelta(false, it.id, args)
}

// closeOpen finishes the open item with status.
func (s *ChatToResponsesStream) closeOpen(status string) error {
	if s.open < 0 {
		return nil
	}
	n := s.open
	it := s.items[n]
	s.open = -1
	if it.think {
		it.status = "completed"
		text := it.buf.String()
		if err := s.emit("response.reasoning_text.done", evReasoningDone{Type: "response.reasoning_text.done", SequenceNumber: s.seq,
			ItemID: it.id, OutputIndex: n, Text: text}); err != nil {
			return err
		}
		if err := s.emit("response.content_part.done", evPart{Type: "response.content_part.done", SequenceNumber: s.seq,
			ItemID: it.id, OutputIndex: n, Part: reasoningText{Type: "reasoning_text", Text: text}}); err != nil {
			return err
		}
		return s.emit("response.output_item.done", evItem{Type: "response.output_item.done", SequenceNumber: s.seq,
			OutputIndex: n, Item: it.render()})
	}
	if it.call {
		for _, st := range s.order {
			if st.item == n {
				st.closed = true
			}
		}
		if strings.TrimSpace(it.buf.String()) == "" {
			// Clients parse the arguments: never hand out an empty string.
			s.open = n
			if err := s.argsDelta("{}"); err != nil {
				return err
			}
			s.open = -1
		}
		it.status = "completed"
		if err := s.emit("response.function_call_arguments.done", evArgsDone{Type: "response.function_call_arguments.done",
			SequenceNumber: s.seq, ItemID: it.id, OutputIndex: n, Name: it.name, Arguments: it.buf.String()}); err != nil {
			return err
		}
	} else {
		it.status = status
		text := it.buf.String()
		if err := s.emit("response.output_text.done", evTextDone{Type: "response.output_text.done", SequenceNumber: s.seq,
			ItemID: it.id, OutputIndex: n, Text: text, Logprobs: []any{}}); err != nil {
			return err
		}
		if err := s.emit("response.content_part.done", evPart{Type: "response.content_part.done", SequenceNumber: s.seq,
			ItemID: it.id, OutputIndex: n, Part: newOutputText(text)}); err != nil {
			return err
		}
	}
	return s.emit("response.output_item.done", evItem{Type: "response.output_item.done", SequenceNumber: s.seq,
		OutputIndex: n, Item: it.render()})
}

// Finish ends the response after the upstream's [DONE]: it closes the open item and sends
// response.completed, or response.incomplete for a length or content-filter stop.
func (s *ChatToResponsesStream) Finish() error {
	if s.failed {
		return fmt.Errorf("%w: stream already failed", ErrUpstream)
	}
	if s.finished {
		return nil
	}
	if err := s.start(gjson.Result{}); err != nil {
		return err
	}
	for _, st := range s.order {
		if st.item < 0 && !st.closed {
			if err := s.startTool(st); err != nil {
				return err
			}
		}
	}
	kind, _ := s.opt.stopKind(s.finish, s.stopSeq, len(s.order) > 0)
	status, details := responseStatus(kind)
	if err := s.closeOpen(status); err != nil {
		return err
	}
	s.finished = true
	event := sse.ResponseCompleted
	if status == "incomplete" {
		event = sse.ResponseIncomplete
	}
	return s.emit(event, evResponse{Type: event, SequenceNumber: s.seq, Response: s.response(status, details)})
}

// Responses-style stream events.
type (
	evResponse struct {
		Type           string         `json:"type"`
		SequenceNumber int64          `json:"sequence_number"`
		Response       responseObject `json:"response"`
	}
	evItem struct {
		Type           string `json:"type"`
		SequenceNumber int64  `json:"sequence_number"`
		OutputIndex    int    `json:"output_index"`
		Item           any    `json:"item"`
	}
	evPart struct {
		Type           string `json:"type"`
		SequenceNumber int64  `json:"sequence_number"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		ContentIndex   int    `json:"content_index"`
		Part           any    `json:"part"` // outputText, or reasoningText in a reasoning item
	}
	evTextDelta struct {
		Type           string `json:"type"`
		SequenceNumber int64  `json:"sequence_number"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		ContentIndex   int    `json:"content_index"`
		Delta          string `json:"delta"`
		Logprobs       []any  `json:"logprobs"`
	}
	evTextDone struct {
		Type           string `json:"type"`
		SequenceNumber int64  `json:"sequence_number"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		ContentIndex   int    `json:"content_index"`
		Text           string `json:"text"`
		Logprobs       []any  `json:"logprobs"`
	}
	evArgsDelta struct {
		Type           string `json:"type"`
		SequenceNumber int64  `json:"sequence_number"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		Delta          string `json:"delta"`
	}
	evReasoningDone struct {
		Type           string `json:"type"`
		SequenceNumber int64  `json:"sequence_number"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		ContentIndex   int    `json:"content_index"`
		Text           string `json:"text"`
	}
	evArgsDone struct {
		Type           string `json:"type"`
		SequenceNumber int64  `json:"sequence_number"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		Name           string `json:"name"`
		Arguments      string `json:"arguments"`
	}
)
