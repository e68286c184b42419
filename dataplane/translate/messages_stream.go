package translate

import (
	"fmt"

	"github.com/tidwall/gjson"
	"strconv"
	"strings"

	"github.com/sekgate/gateway/dataplane/sse"
	"github.com/sekgate/gateway/shared/jsonenc"
)

// ChatToMessagesStream turns a streamed chat completion into Messages-style events. Feed it
// each chat SSE data payload in order, then call Finish on "data: [DONE]". When the upstream
// stream ends without [DONE], do not call Finish: the client then gets no message_stop and
// knows the output is incomplete. Usage is available at any point for billing.
//
// Events: message_start (on the first chunk), then per content block content_block_start,
// content_block_delta (text_delta, or input_json_delta whose partial_json fragments are the
// upstream's argument fragments, unchanged and in order), content_block_stop; then, on
// Finish, message_delta with stop_reason, stop_sequence and usage (input_tokens and
// output_tokens, from the upstream's usage chunk), and message_stop.
//
// Each chat tool call (by its index) gets its own tool_use block; a block is opened once the
// call's name is known (fragments arriving earlier are held) and closed when another block
// starts, as Messages-style streams never interleave blocks. A fragment for a call whose
// block is already closed is an ErrUpstream error rather than being merged into another
// call. Reasoning deltas (the dialect's reasoning member) become a thinking block before
// the text: content_block_start type thinking, thinking_delta events, then a
// signature_delta before its content_block_stop. Only choice 0 is translated.
//
// Not safe for concurrent use.
type ChatToMessagesStream struct {
	model string
	w     func(event, data []byte) error

	started  bool
	finished bool
	failed   bool
	errSent  bool // the error event was written
	id       string
	next     int         // index of the next content block
	open     int         // index of the open block, -1 when none
	openTool *streamTool // tool call in the open block, nil for text or thinking
	thinking bool        // the open block is a thinking block
	sig      signature   // of the open thinking block
	opt      Options
	tools    map[int]*streamTool // current call per chat tool index
	order    []*streamTool       // every call, by first appearance
	finish   string
	seq      string
	usage    Usage
	cached   int64  // cached prompt tokens of usage
	out      []byte // the data of the last delta event, reused
}

type streamTool struct {
	n        int    // position among the answer's tool calls
	upID     string // the upstream's call ID
	id, name string
	pending  []string // argument fragments received before the name
	started  bool
	closed   bool
}

// NewChatToMessagesStream returns a translator writing each event through w; model is the
// name the client asked for.
func NewChatToMessagesStream(model string, w func(event, data []byte) error) *ChatToMessagesStream {
	return &ChatToMessagesStream{model: model, w: w, open: -1, tools: map[int]*streamTool{}}
}

// Usage returns the usage reported so far (zero until the upstream's usage chunk).
func (s *ChatToMessagesStream) Usage() Usage { return s.usage }

// Configure sets the translation's options (before the first Feed).
func (s *ChatToMessagesStream) Configure(o Options) *ChatToMessagesStream { s.opt = o; return s }

func (s *ChatToMessagesStream) emit(event string, v any) error {
	b, err := marshal(v)
	if err != nil {
		return err
	}
	return s.w([]byte(event), b)
}

// Feed translates one chat completion chunk (the data of one SSE event, without "data: ").
func (s *ChatToMessagesStream) Feed(chunk []byte) error {
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
	if !s.started {
		if err := s.start(root.Get("id").Str); err != nil {
			return err
		}
	}
	if u, ok := usageFromChat(m.usage); ok {
		s.usage = u
		s.cached = detailCount(m.usage.Get("prompt_tokens_details.cached_tokens"))
	}
	err := firstChoice(m.choices, &s.opt, s.choice)
	if err != nil {
		s.failed = true
	}
	return err
}

// Fail ends the stream with an error event carrying msg (the upstream reported an error,
// its stream broke, or a chunk could not be translated); after Finish it does nothing.
func (s *ChatToMessagesStream) Fail(msg string) error {
	if s.finished || s.errSent {
		return nil
	}
	s.failed, s.errSent = true, true
	if msg == "" {
		msg = "upstream error"
	}
	return s.emit("error", evError{Type: "error", Error: errBody{Type: "api_error", Message: msg}})
}

func (s *ChatToMessagesStream) start(upstreamID string) error {
	if s.started {
		return nil
	}
	s.started = true
	s.id = "msg_" + idSuffix(upstreamID)
	return s.emit(sse.MessageStart, evMessageStart{Type: sse.MessageStart, Message: anthropicMessage{
		ID: s.id, Type: "message", Role: "assistant", Model: s.model, Content: []any{}}})
}

func (s *ChatToMessagesStream) choice(c choiceMembers) error {
	finish, stop, ok, err := feedChoice(c, s)
	if ok {
		s.finish, s.seq = finish, stop
	}
	return err
}

func (s *ChatToMessagesStream) reasoning(t string) error {
	if s.open < 0 || !s.thinking {
		if err := s.closeOpen(); err != nil {
			return err
		}
		s.open, s.openTool, s.thinking = s.next, nil, true
		s.next++
		if err := s.emit("content_block_start", evBlockStart{Type: "content_block_start", Index: s.open,
			ContentBlock: anthropicThinking{Type: "thinking", Thinking: "", Signature: ""}}); err != nil {
			return err
		}
	}
	s.sig.write(t)
	return s.emitDelta("thinking_delta", "thinking", t)
}

func (s *ChatToMessagesStream) text(t string) error {
	if s.open < 0 || s.openTool != nil || s.thinking {
		if err := s.closeOpen(); err != nil {
			return err
		}
		s.open, s.openTool = s.next, nil
		s.next++
		if err := s.emit("content_block_start", evBlockStart{Type: "content_block_start", Index: s.open,
			ContentBlock: anthropicText{Type: "text", Text: ""}}); err != nil {
			return err
		}
	}
	return s.emitDelta("text_delta", "text", t)
}

// contentBlockDelta is the name of the most frequent event, as the writer takes it.
var contentBlockDelta = []byte(sse.ContentBlockDelta)

// emitDelta writes a content_block_delta of the open block whose delta has type kind and
// the string v in field. It encodes the event by hand, into a buffer it reuses, because it
// is once per generated token; the bytes are those marshal makes of evBlockDelta.
func (s *ChatToMessagesStream) emitDelta(kind, field, v string) error {
	b := append(s.out[:0], `{"type":"content_block_delta","index":`...)
	b = strconv.AppendInt(b, int64(s.open), 10)
	b = append(b, `,"delta":{"type":"`...)
	b = append(b, kind...)
	b = append(b, `","`...)
	b = append(b, field...)
	b = append(b, `":`...)
	b = jsonenc.AppendString(b, v)
	b = append(b, "}}"...)
	s.out = b
	return s.w(contentBlockDelta, b)
}

func (s *ChatToMessagesStream) toolDelta(idx int, id, name, args string) error {
	st := s.tools[idx]
	if st == nil || id != "" && st.upID != "" && id != st.upID {
		// A new ID at a known index is a new call (some servers number every call 0):
		// it gets its own block rather than being merged into the previous call.
		st = &streamTool{n: len(s.order), upID: id}
		s.tools[idx] = st
		s.order = append(s.order, st)
	}
	if st.closed {
		if args != "" {
			return fmt.Errorf("%w: arguments for tool call %d after its block was closed", ErrUpstream, idx)
		}
		return nil
	}
	if st.upID == "" {
		st.upID = id
	}
	if !st.started {
		st.name += name
		if args != "" {
			st.pending = append(st.pending, strings.Clone(args))
		}
		if st.name == "" {
			return nil
		}
		return s.startTool(st)
	}
	if args == "" {
		return nil
	}
	return s.inputDelta(args)
}

func (s *ChatToMessagesStream) startTool(st *streamTool) error {
	if err := s.closeOpen(); err != nil {
		return err
	}
	st.started = true
	st.id = st.upID
	if st.id == "" {
		st.id = "toolu_" + s.id[len("msg_"):] + "_" + strconv.Itoa(st.n)
	}
	s.open, s.openTool = s.next, st
	s.next++
	if err := s.emit("content_block_start", evBlockStart{Type: "content_block_start", Index: s.open,
		ContentBlock: anthropicToolUse{Type: "tool_use", ID: st.id, Name: st.name, Input: []byte("{}")}}); err != nil {
		return err
	}
	p := st.pending
	st.pending = nil
	for _, frag := range p {
		if err := s.inputDelta(frag); err != nil {
			return err
		}
	}
	return nil
}

func (s *ChatToMessagesStream) inputDelta(args string) error {
	return s.emitDelta("input_json_delta", "partial_json", args)
}

func (s *ChatToMessagesStream) closeOpen() error {
	if s.open < 0 {
		return nil
	}
	if s.openTool != nil {
		s.openTool.closed = true
	}
	if s.thinking {
		if err := s.emitDelta("signature_delta", "signature", s.sig.sum()); err != nil {
			return err
		}
	}
	i := s.open
	s.open, s.openTool, s.thinking = -1, nil, false
	return s.emit("content_block_stop", evBlockStop{Type: "content_block_stop", Index: i})
}

// Finish ends the message after the upstream's [DONE]: it closes the open block, sends
// message_delta (stop reason and usage) and message_stop.
func (s *ChatToMessagesStream) Finish() error {
	if s.failed {
		return fmt.Errorf("%w: stream already failed", ErrUpstream)
	}
	if s.finished {
		return nil
	}
	if err := s.start(""); err != nil {
		return err
	}
	// A call whose name never arrived still gets its block, so no argument is lost.
	for _, st := range s.order {
		if !st.started && !st.closed {
			if err := s.startTool(st); err != nil {
				return err
			}
		}
	}
	if err := s.closeOpen(); err != nil {
		return err
	}
	s.finished = true
	kind, named := s.opt.stopKind(s.finish, s.seq, len(s.order) > 0)
	reason := messagesStop(kind)
	var seq *string
	if kind == stopSequence && named != "" {
		seq = &named
	}
	if err := s.emit(sse.MessageDelta, evMessageDelta{Type: sse.MessageDelta,
		Delta: messageDelta{StopReason: reason, StopSequence: seq},
		Usage: messagesUsage(s.usage, s.cached)}); err != nil {
		return err
	}
	return s.emit(sse.MessageStop, evType{Type: sse.MessageStop})
}

// Messages-style stream events, fields in the order the protocol documents them.
type (
	evType struct {
		Type string `json:"type"`
	}
	evError struct {
		Type  string  `json:"type"`
		Error errBody `json:"error"`
	}
	errBody struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	evMessageStart struct {
		Type    string           `json:"type"`
		Message anthropicMessage `json:"message"`
	}
	evBlockStart struct {
		Type         string `json:"type"`
		Index        int    `json:"index"`
		ContentBlock any    `json:"content_block"`
	}
	evBlockDelta struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
		Delta any    `json:"delta"`
	}
	textDelta struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	inputJSONDelta struct {
		Type        string `json:"type"`
		PartialJSON string `json:"partial_json"`
	}
	evBlockStop struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
	}
	evMessageDelta struct {
		Type  string         `json:"type"`
		Delta messageDelta   `json:"delta"`
		Usage anthropicUsage `json:"usage"`
	}
	messageDelta struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	}
)
