package proxy

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/dialect"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/reqparse"
	"github.com/sekgate/gateway/dataplane/sse"
	"github.com/sekgate/gateway/dataplane/tokens"
)

// ErrStreamTimeout is the stream's error when the upstream's total timeout cut it.
var ErrStreamTimeout = errors.New("proxy: stream exceeded total timeout")

// Errors of an upstream stream that broke its protocol: the event is not relayed and the
// stream ends (IsInvalid reports both).
var (
	// ErrInvalidEvent: an event's data is not valid JSON in a JSON protocol.
	ErrInvalidEvent = errors.New("proxy: upstream event is not valid JSON")
	// ErrInvalidUsage: reported usage is not a count or exceeds what the request made
	// possible (tokens.Bounds).
	ErrInvalidUsage = errors.New("proxy: upstream usage out of bounds")
)

// ReportedError is an error the upstream reported inside its 200 stream (a chat event with
// an error member, llama.cpp server's "error:" line, a Messages-style error event), in the
// server's own words. The stream ends there.
type ReportedError struct{ Info dialect.Error }

func (e *ReportedError) Error() string { return "proxy: upstream reported an error: " + e.Info.Message }

// Reported returns the error the upstream reported inside its stream, if err is one.
func Reported(err error) (*ReportedError, bool) {
	var r *ReportedError
	ok := errors.As(err, &r)
	return r, ok
}

// IsInvalid reports whether err says the upstream broke the protocol (an invalid event or
// impossible usage), as opposed to a transport failure.
func IsInvalid(err error) bool {
	return errors.Is(err, ErrInvalidEvent) || errors.Is(err, ErrInvalidUsage)
}

// StreamResult is what the upstream's stream reported. What the client received (its
// events, whether its stream is complete) is the relay's to know (dataplane/server).
type StreamResult struct {
	// PromptTokens and CompletionTokens are the latest usage the upstream reported, within
	// the stream's bounds (replaced by the bound when the upstream exceeded it).
	PromptTokens, CompletionTokens int64
	// PromptReported and OutputReported say whether the upstream reported each side (in a
	// final usage chunk, or running usage in earlier events).
	PromptReported, OutputReported bool
	// Ended is set once the upstream protocol's last event was read: chat and text
	// completions' [DONE], Messages-style message_stop, a Responses-style response.completed,
	// response.failed or response.incomplete (the latter two also set Err).
	Ended bool
	// ResponseID is a Responses-style stream's response ID (from response.created).
	ResponseID string
	// Server is the server the stream's chunks showed, when ServerDetected
	// (StreamOptions.Detect).
	Server         dialect.Server
	ServerDetected bool
	// Err is the upstream-side error that ended the stream early (read error, oversized
	// event, truncated stream, timeout, ErrInvalidEvent, ErrInvalidUsage, a failed or
	// incomplete response); nil after a clean end.
	Err error
}

// reader is what a stream reads with, kept in a pool between streams: the SSE reader and its
// buffers, and the scratch space for the notes of an event's scan.
type reader struct {
	*sse.Reader
	members reqparse.EventMembers // where the members of the chat event inspected last are
}

var readerPool = sync.Pool{New: func() any { return &reader{Reader: sse.NewReader(nil, sse.DefaultMaxEvent)} }}

type closer interface{ CloseWithError(error) error }

// StreamOptions are what Stream checks and strips besides relaying.
type StreamOptions struct {
	// DropUsageOnly removes the usage-only chunk the gateway asked for on the client's
	// behalf.
	DropUsageOnly bool
	// Total bounds the whole stream (0: unbounded).
	Total time.Duration
	// Bounds are the most usage the request can have caused; reported usage beyond them
	// ends the stream with ErrInvalidUsage. The zero value checks only that counts are
	// counts.
	Bounds tokens.Bounds
	// StripRunningUsage removes the usage member from chat chunks that carry choices: the
	// running usage the gateway asked for (continuous_usage_stats) on behalf of a client
	// that did not ask for it. The final usage-only chunk is left to DropUsageOnly.
	StripRunningUsage bool
	// Dialect is the upstream server's (nil: dialect.Default).
	Dialect *dialect.Dialect
	// MirrorReasoning gives each chat chunk's reasoning both names (MirrorReasoning), and
	// names the server's own natural-end finish reasons "stop" (NormalizeFinish), for a chat
	// client the stream passes to.
	MirrorReasoning bool
	// Detect looks for the server the first chat chunk shows (dialect.Detect), for a route
	// that names none; Result.Server holds it.
	Detect bool
}

// Stream reads one upstream server-sent event stream for a relay. Every event of a JSON
// protocol is checked to be valid JSON (the [DONE] sentinel of chat and text completions
// aside) before it is handed out, and every usage it reports is checked against the bounds.
type Stream struct {
	resp        *fasthttp.Response
	rd          *reader
	e           index.Endpoint
	opt         StreamOptions
	pending     sse.Event
	hasPending  bool
	pendingSend bool // the peeked event was inspected and is to be relayed
	pendingErr  error
	msgs        tokens.Messages
	chatEvents  int64
	out, before tokens.Delivered // Delivered, Before
	responses   responsesTally   // a Responses-style stream's output so far
	rewritten   []byte           // an event rewritten by inspect (running usage stripped), reused
	mirrored    []byte           // a chunk with its reasoning mirrored, reused
	timer       *time.Timer
	timedOut    atomic.Bool
	Result      StreamResult
}

// OpenStream starts relaying resp, whose body must be streaming (Upstream.Do with stream).
// Close must be called.
func OpenStream(resp *fasthttp.Response, e index.Endpoint, opt StreamOptions) *Stream {
	body := resp.BodyStream()
	if body == nil {
		body = bytes.NewReader(resp.Body())
	}
	rd := readerPool.Get().(*reader)
	rd.Reset(body)
	s := &Stream{resp: resp, rd: rd, e: e, opt: opt}
	if c, ok := body.(closer); ok && opt.Total > 0 {
		s.timer = time.AfterFunc(opt.Total, func() {
			s.timedOut.Store(true)
			_ = c.CloseWithError(ErrStreamTimeout)
		})
	}
	return s
}

// Peek reads the first event before anything is sent to the client, so that an upstream
// failure at this point can still become a JSON error (or fail over).
// An invalid first event (ErrInvalidEvent, ErrInvalidUsage) is returned here too, so the
// attempt fails over rather than commit to a provider that breaks its protocol.
func (s *Stream) Peek() error {
	ev, err := s.rd.Next()
	if err != nil {
		return s.upstreamErr(err)
	}
	s.pending, s.hasPending = ev, true
	s.pendingSend, s.pendingErr = s.inspect(&s.pending)
	return s.pendingErr
}

// Next returns the next upstream event to relay, the peeked one first, after reading usage
// and the end of the stream from it into Result; a usage-only chunk that DropUsageOnly
// removes is skipped. An error ends the stream and is also kept in Result.Err.
func (s *Stream) Next() (sse.Event, error) {
	if s.hasPending {
		s.hasPending = false
		if s.pendingErr != nil {
			s.Result.Err = s.pendingErr
			return sse.Event{}, s.pendingErr
		}
		if s.pendingSend {
			return s.pending, nil
		}
	}
	for {
		ev, err := s.rd.Next()
		if err != nil {
			s.Result.Err = s.upstreamErr(err)
			return sse.Event{}, s.Result.Err
		}
		send, err := s.inspect(&ev)
		if err != nil {
			s.Result.Err = err
			return sse.Event{}, err
		}
		if send {
			return ev, nil
		}
	}
}

// Delivered is the generated output of every event Next has returned (tokens.Delivered),
// read from every shape an event carries it in (output.go, delivered.go). A relay counts it
// against the request's output bound, and a record charges at least its tokens.
func (s *Stream) Delivered() tokens.Delivered { return s.out }

// Before is Delivered without the event Next returned last: what a relay delivered when it
// did not send that event.
func (s *Stream) Before() tokens.Delivered { return s.before }

func (s *Stream) upstreamErr(err error) error {
	if s.timedOut.Load() {
		return ErrStreamTimeout
	}
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// inspect checks ev, reads usage, output and terminal signals from it, and reports whether
// to relay it. An error means the upstream broke its protocol: the stream must end.
func (s *Stream) inspect(ev *sse.Event) (bool, error) {
	send, out, err := s.read(ev)
	if send && err == nil {
		s.before, s.out = s.out, s.out.Add(out)
	}
	return send, err
}

// read is inspect but for counting: it returns the output ev delivers when relayed.
func (s *Stream) read(ev *sse.Event) (send bool, out tokens.Delivered, err error) {
	if len(ev.Data) == 0 {
		if ev.Error != nil && s.dialect().ErrorLine {
			return false, out, lineError(ev.Error)
		}
		// A comment (keep-alive) or an empty data field (sent by relays in front of
		// servers): dropped, as SDKs fail on an empty data field.
		return false, out, nil
	}
	switch s.e {
	case index.EPChat, index.EPCompletions:
		return s.readChat(ev)
	case index.EPMessages:
		return s.readMessages(ev)
	case index.EPResponses:
		return s.readResponses(ev)
	}
	return true, out, nil
}

// readChat is read for a chat or text completions event.
func (s *Stream) readChat(ev *sse.Event) (bool, tokens.Delivered, error) {
	if string(ev.Data) == sse.DoneData {
		s.Result.Ended = true
		return true, tokens.Delivered{}, nil
	}
	c, ok := chatEvent(ev.Data, &s.rd.members)
	if !ok {
		return false, tokens.Delivered{}, ErrInvalidEvent
	}
	if c.reported {
		return false, tokens.Delivered{}, eventError(ev.Data)
	}
	usage, noChoices := c.usage, c.noChoices
	out, ok := chunkOutput(c.choices, s.e == index.EPCompletions)
	if !ok {
		return false, tokens.Delivered{}, ErrInvalidEvent
	}
	s.chatEvents++
	if s.opt.Detect && s.chatEvents == 1 {
		// The first chunk only: SGLang's nulls and the fingerprints are in every chunk;
		// vLLM's stop_reason only in the last, and whole answers name it.
		s.Result.Server, s.Result.ServerDetected = dialect.Detect(ev.Data)
	}
	if !usage.IsObject() {
		if s.opt.MirrorReasoning {
			s.mirror(ev)
		}
		return true, out, nil
	}
	if bu, ok := tokens.FromChat(usage); ok {
		if err := s.setUsage(bu, true, true); err != nil {
			return false, out, err
		}
	}
	if s.opt.DropUsageOnly && noChoices {
		return false, out, nil
	}
	if s.opt.StripRunningUsage && !noChoices {
		s.stripUsage(ev)
	}
	if s.opt.MirrorReasoning {
		s.mirror(ev)
	}
	return true, out, nil
}

// readMessages is read for a Messages-style event. message_start's output_tokens is a
// placeholder (servers send 0 or 1): output counts as reported only once a message_delta
// reports it.
func (s *Stream) readMessages(ev *sse.Event) (bool, tokens.Delivered, error) {
	if string(ev.Name) == sse.ContentBlockDelta {
		// The stream's bulk: validated and read in one scan.
		out, ok := s.fastEvent(ev.Data, messagesDelta)
		if !ok {
			return false, tokens.Delivered{}, ErrInvalidEvent
		}
		return true, out, nil
	}
	if !validEvent(ev.Data) {
		return false, tokens.Delivered{}, ErrInvalidEvent
	}
	out := messagesOutput(ev.Data)
	switch string(ev.Name) {
	case sse.MessageStart:
		s.msgs.UpdateStart(gjson.GetBytes(ev.Data, "message.usage"))
	case sse.MessageDelta:
		s.msgs.Update(gjson.GetBytes(ev.Data, "usage"))
	case sse.MessageStop:
		s.Result.Ended = true
		return true, out, nil
	case "error":
		return false, out, eventError(ev.Data)
	default:
		return true, out, nil
	}
	in, outReported := s.msgs.Reported()
	if err := s.setUsage(s.msgs.Billed(), in, outReported); err != nil {
		return false, out, err
	}
	return true, out, nil
}

// readResponses is read for a Responses-style event.
func (s *Stream) readResponses(ev *sse.Event) (bool, tokens.Delivered, error) {
	if bytes.HasSuffix(ev.Name, []byte(sse.DeltaSuffix)) {
		// The stream's bulk: validated and read in one scan.
		out, ok := s.fastEvent(ev.Data, func(data []byte, m *reqparse.EventMembers) (tokens.Delivered, bool) {
			return s.responses.delta(ev.Name, data, m)
		})
		if !ok {
			return false, tokens.Delivered{}, ErrInvalidEvent
		}
		return true, out, nil
	}
	if !validEvent(ev.Data) {
		return false, tokens.Delivered{}, ErrInvalidEvent
	}
	switch name := string(ev.Name); name {
	case "response.created":
		if id := gjson.GetBytes(ev.Data, "response.id"); id.Type == gjson.String {
			s.Result.ResponseID = id.Str // GetBytes copies
		}
	case "error":
		// The Responses protocol's error event: {"type":"error","code":..,"message":..}.
		e := eventError(ev.Data)
		if m := gjson.GetBytes(ev.Data, "message"); m.Type == gjson.String && m.Str != "" {
			e.Info.Message = m.Str
		}
		return false, tokens.Delivered{}, e
	case sse.ResponseCompleted, sse.ResponseFailed, sse.ResponseIncomplete:
		if bu, ok := tokens.FromResponses(gjson.GetBytes(ev.Data, "response.usage")); ok {
			if err := s.setUsage(bu, true, true); err != nil {
				return false, tokens.Delivered{}, err
			}
		}
		s.Result.Ended = true
		if name != sse.ResponseCompleted {
			s.Result.Err = errors.New("proxy: upstream response " + name)
		}
	}
	return true, s.responses.add(ev.Name, ev.Data), nil
}

// fastEvent validates an event (validEvent) and reads its output with read, from the
// notes of the scan that validated it when it can (reqparse.ScanEvent).
func (s *Stream) fastEvent(data []byte, read func([]byte, *reqparse.EventMembers) (tokens.Delivered, bool)) (tokens.Delivered, bool) {
	m := &s.rd.members
	if reqparse.ScanEvent(data, m) {
		if out, ok := read(data, m); ok {
			return out, true
		}
		return read(data, nil) // the notes cannot tell
	}
	if len(data) > shallowEvent || !gjson.ValidBytes(data) {
		return tokens.Delivered{}, false
	}
	return read(data, nil) // valid, but nested deeper than the scan goes
}

// dialect is the upstream server's table.
func (s *Stream) dialect() *dialect.Dialect {
	if s.opt.Dialect == nil {
		return dialect.Default()
	}
	return s.opt.Dialect
}

// setUsage records reported usage after checking it against the stream's bounds.
func (s *Stream) setUsage(u tokens.Usage, in, out bool) error {
	bin, bout, ok := s.opt.Bounds.Check(u.InputTokens, u.OutputTokens)
	if in {
		s.Result.PromptTokens, s.Result.PromptReported = bin, true
	}
	if out {
		s.Result.CompletionTokens, s.Result.OutputReported = bout, true
	}
	if !ok || u.Invalid {
		return ErrInvalidUsage
	}
	return nil
}

// drainWait bounds how long Close waits for the end of an upstream body after the
// protocol's last event ([DONE], message_stop, response.completed): the end of the chunked
// body normally follows at once, and reading it lets the connection go back to the pool
// instead of every stream dialling a new one. An upstream that keeps the body open longer
// has its connection closed; the client has its last event already, only the end of its
// response waits.
const drainWait = 10 * time.Millisecond

// drainMax is the most Close reads after the last event before it gives up on the
// connection.
const drainMax = 64 << 10

var errDrained = errors.New("proxy: upstream body still open after the stream's last event")

// Close stops the stream: an unfinished upstream body closes its connection (cancelling the
// upstream's work); a finished one returns the connection to the pool.
func (s *Stream) Close() {
	if s.timer != nil {
		s.timer.Stop()
	}
	if s.Result.Ended && s.Result.Err == nil && s.rd != nil {
		s.finishBody()
	}
	if !s.Result.Ended || s.Result.Err != nil {
		// An upstream that broke its stream may have ended it with what looks like a clean
		// end of body (a closed connection); never hand such a connection back to the pool.
		s.resp.SetConnectionClose()
	}
	_ = s.resp.CloseBodyStream()
	if s.rd != nil {
		s.rd.Reset(nil)
		readerPool.Put(s.rd)
		s.rd = nil
	}
}

// finishBody reads the end of a cleanly ended upstream body (see drainWait) and marks the
// connection for closing when it does not come in time.
func (s *Stream) finishBody() {
	c, ok := s.resp.BodyStream().(closer)
	if !ok {
		return
	}
	if s.timer != nil {
		s.timer.Reset(drainWait) // its CloseWithError interrupts the read below
	} else {
		s.timer = time.AfterFunc(drainWait, func() { _ = c.CloseWithError(errDrained) })
	}
	ok = s.rd.Finish(drainMax)
	s.timer.Stop()
	if !ok {
		s.resp.SetConnectionClose()
	}
}

// shallowEvent is the size up to which an event's JSON is validated without first bounding
// its nesting: gjson's validator recurses per level, and an event this small cannot nest
// deeper than a few thousand levels (a few hundred KiB of stack at worst).
const shallowEvent = 4 << 10

// validEvent reports whether data is valid JSON, without allocating.
func validEvent(data []byte) bool {
	if len(data) > shallowEvent {
		return reqparse.ValidJSON(data) // bounds the nesting first
	}
	return gjson.ValidBytes(data)
}

// chatNotes is what chatEvent found in a chat or text completion event.
type chatNotes struct {
	// usage is the top-level usage member when the event is an object with one that is an
	// object (gjson's zero Result otherwise).
	usage gjson.Result
	// noChoices: the event's choices are absent, null or an empty array (read only with
	// a usage object).
	noChoices bool
	// reported: a top-level error member that is not null (an error the server reported
	// inside its stream).
	reported bool
	// choices is the raw value of the top-level choices member (nil: none).
	choices []byte
}

// chatEvent checks a chat or text completion event (validEvent) and, in the same pass,
// finds its top-level usage, error and choices members (chatNotes). m is scratch space for
// the scan's notes. When the notes cannot tell (an escaped key, many members, an event
// nested deeper than the scan goes, leading spaces), chatEventSlow reads the event with
// gjson. The members read are in data's buffer: they must be read before it
// is reused.
func chatEvent(data []byte, m *reqparse.EventMembers) (c chatNotes, ok bool) {
	if !reqparse.ScanEvent(data, m) {
		if len(data) > shallowEvent || !gjson.ValidBytes(data) {
			return chatNotes{}, false
		}
		return chatEventSlow(data) // valid, but nested deeper than the scan goes
	}
	if data[0] != '{' {
		return chatEventSlow(data) // (gjson reads past leading spaces)
	}
	var vals [3][]byte
	if !m.Members(data, chatMembers[:], vals[:]) {
		return chatEventSlow(data)
	}
	e, ch, u := vals[0], vals[1], vals[2]
	c.reported = e != nil && string(e) != "null"
	c.choices = ch
	if u == nil || u[0] != '{' {
		return c, true
	}
	c.noChoices = ch == nil || string(ch) == "null" || ch[0] == '[' && ch[len(ch)-1] == ']' && emptyArray(ch)
	// The usage object is read before the event's buffer is reused, so it need not be copied.
	c.usage = gjson.Parse(unsafe.String(unsafe.SliceData(u), len(u)))
	return c, true
}

// chatMembers are the top-level members chatEvent reads: error, choices, usage.
var chatMembers = [3]string{"error", "choices", "usage"}

// emptyArray reports whether the JSON array a (valid) has no elements.
func emptyArray(a []byte) bool {
	for _, c := range a[1 : len(a)-1] {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

var (
	usageKey = []byte(`"usage"`)
	errorKey = []byte(`"error"`)
)

// reportsError reports whether event data (valid JSON) has a top-level error member that
// is not null, reading it with gjson.
func reportsError(data []byte) bool {
	if !bytes.Contains(data, errorKey) {
		return false
	}
	e := gjson.GetBytes(data, "error")
	return e.Exists() && e.Type != gjson.Null
}

// eventError is the error a stream event (valid JSON with an error member) reports.
func eventError(data []byte) *ReportedError {
	e, ok := dialect.ReadError(data)
	if !ok || e.Message == "" {
		e.Message = "the provider reported an error without a message"
	}
	return &ReportedError{Info: e}
}

// lineError is the error of llama.cpp server's "error: {...}" line.
func lineError(v []byte) *ReportedError {
	b := make([]byte, 0, len(v)+10)
	b = append(append(append(b, `{"error":`...), v...), '}')
	return eventError(b)
}

// stripUsage removes ev's usage member.
func (s *Stream) stripUsage(ev *sse.Event) {
	d, err := sjson.DeleteBytes(ev.Data, "usage")
	if err != nil {
		return
	}
	s.rewrite(ev, d)
}

// mirror gives ev's reasoning both names (MirrorReasoning) and its finish reason the
// chat protocol's name (NormalizeFinish), in the stream's buffers.
func (s *Stream) mirror(ev *sse.Event) {
	if d, ok := MirrorReasoning(s.mirrored, ev.Data, "delta"); ok {
		s.mirrored = d
		s.rewrite(ev, d)
	}
	if d, ok := NormalizeFinish(s.mirrored, ev.Data, s.dialect().FinishStop); ok {
		s.mirrored = d
		s.rewrite(ev, d)
	}
}

// rewrite makes d ev's data, in a buffer of the stream's; ev's Raw then points there (a
// chat event is relayed as one data line).
func (s *Stream) rewrite(ev *sse.Event, d []byte) {
	b := append(s.rewritten[:0], "data: "...)
	b = append(b, d...)
	b = append(b, "\n\n"...)
	s.rewritten = b
	ev.Raw, ev.Data = b, b[len("data: "):len(b)-2]
}

// chatEventSlow is chatEvent after validation, reading the event with gjson. An event
// with a duplicated error, choices or usage member is not read (ok false): a JSON client
// keeps the last, gjson reads the first.
func chatEventSlow(data []byte) (c chatNotes, ok bool) {
	c.reported = reportsError(data)
	root := gjson.Parse(unsafe.String(unsafe.SliceData(data), len(data)))
	if !root.IsObject() {
		return c, true
	}
	var seen [len(chatMembers)]bool
	dup := false
	root.ForEach(func(k, _ gjson.Result) bool {
		for i, name := range chatMembers {
			if k.Str == name {
				dup, seen[i] = seen[i], true
			}
		}
		return !dup
	})
	if dup {
		return chatNotes{}, false
	}
	ch := root.Get("choices")
	if ch.Exists() {
		c.choices = []byte(ch.Raw)
	}
	if data[0] != '{' || !bytes.Contains(data, usageKey) {
		return c, true // usage is read only from an event that starts with its object
	}
	u := root.Get("usage")
	if !u.IsObject() {
		return c, true
	}
	c.usage = u
	c.noChoices = !ch.Exists() || ch.Type == gjson.Null || (ch.IsArray() && len(ch.Array()) == 0)
	return c, true
}
