package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/catalog"
	"github.com/sekgate/gateway/dataplane/sse"
)

// ErrStreamTimeout is the stream's error when the upstream's total timeout cut it.
var ErrStreamTimeout = errors.New("proxy: stream exceeded total timeout")

// StreamResult is what a relayed stream did.
type StreamResult struct {
	PromptTokens, CompletionTokens int64
	// Done is set once the protocol's terminal event was relayed.
	Done bool
	// ClientGone is set when writing to the client failed (disconnect).
	ClientGone bool
	// Err is the upstream-side error that ended the stream early (read error, oversized
	// event, truncated stream, timeout); nil after a clean end.
	Err error
	// Events counts events written to the client.
	Events int
}

var readerPool = sync.Pool{New: func() any { return sse.NewReader(nil, sse.DefaultMaxEvent) }}

type closer interface{ CloseWithError(error) error }

// Stream relays one upstream server-sent event stream to a client.
type Stream struct {
	resp          *fasthttp.Response
	rd            *sse.Reader
	e             catalog.Endpoint
	dropUsageOnly bool
	pending       sse.Event
	hasPending    bool
	timer         *time.Timer
	timedOut      atomic.Bool
	Result        StreamResult
}

// OpenStream starts relaying resp, whose body must be streaming (Upstream.Do with stream).
// dropUsageOnly removes the usage-only chunk the gateway asked for on the client's behalf.
// total bounds the whole stream. Close must be called.
func OpenStream(resp *fasthttp.Response, e catalog.Endpoint, dropUsageOnly bool, total time.Duration) *Stream {
	body := resp.BodyStream()
	if body == nil {
		body = bytes.NewReader(resp.Body())
	}
	rd := readerPool.Get().(*sse.Reader)
	rd.Reset(body)
	s := &Stream{resp: resp, rd: rd, e: e, dropUsageOnly: dropUsageOnly}
	if c, ok := body.(closer); ok && total > 0 {
		s.timer = time.AfterFunc(total, func() {
			s.timedOut.Store(true)
			_ = c.CloseWithError(ErrStreamTimeout)
		})
	}
	return s
}

// Peek reads the first event before anything is sent to the client, so that an upstream
// failure at this point can still become a JSON error (or fail over).
func (s *Stream) Peek() error {
	ev, err := s.rd.Next()
	if err != nil {
		return s.upstreamErr(err)
	}
	s.pending, s.hasPending = ev, true
	return nil
}

// Next returns the next upstream event, the peeked one first, after reading usage and the
// terminal signal from it into Result. It serves callers that transform events rather
// than relay them (protocol translation); Relay is the byte-exact path. An error ends the
// stream and is also kept in Result.Err.
func (s *Stream) Next() (sse.Event, error) {
	var ev sse.Event
	if s.hasPending {
		ev, s.hasPending = s.pending, false
	} else {
		var err error
		if ev, err = s.rd.Next(); err != nil {
			s.Result.Err = s.upstreamErr(err)
			return sse.Event{}, s.Result.Err
		}
	}
	s.inspect(ev)
	return ev, nil
}

func (s *Stream) upstreamErr(err error) error {
	if s.timedOut.Load() {
		return ErrStreamTimeout
	}
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Relay writes events to w, flushing after each one, until the upstream ends, fails, or the
// client goes away. It returns right after the terminal event: a client must not wait on an
// upstream that keeps its connection open after it.
func (s *Stream) Relay(w *bufio.Writer) {
	for {
		var ev sse.Event
		if s.hasPending {
			ev, s.hasPending = s.pending, false
		} else {
			var err error
			ev, err = s.rd.Next()
			if err != nil {
				s.Result.Err = s.upstreamErr(err)
				return
			}
		}
		if !s.inspect(ev) {
			continue
		}
		if _, err := w.Write(ev.Raw); err != nil {
			s.Result.ClientGone = true
			return
		}
		if err := w.Flush(); err != nil {
			s.Result.ClientGone = true
			return
		}
		s.Result.Events++
		if s.Result.Done {
			return
		}
	}
}

var (
	doneData   = []byte("[DONE]")
	usageKey   = []byte(`"usage"`)
	evMsgStart = []byte("message_start")
	evMsgDelta = []byte("message_delta")
	evMsgStop  = []byte("message_stop")
	evRespDone = []byte("response.completed")
	evRespFail = []byte("response.failed")
	evRespInc  = []byte("response.incomplete")
)

// inspect reads usage and terminal signals from ev and reports whether to relay it.
func (s *Stream) inspect(ev sse.Event) bool {
	switch s.e {
	case catalog.EPChat, catalog.EPCompletions:
		if bytes.Equal(ev.Data, doneData) {
			s.Result.Done = true
			return true
		}
		if len(ev.Data) == 0 || ev.Data[0] != '{' || !bytes.Contains(ev.Data, usageKey) {
			return true
		}
		u := gjson.GetBytes(ev.Data, "usage")
		if !u.IsObject() {
			return true
		}
		s.Result.PromptTokens, s.Result.CompletionTokens, _ = usageOf(s.e, u)
		if s.dropUsageOnly {
			ch := gjson.GetBytes(ev.Data, "choices")
			if !ch.Exists() || ch.Type == gjson.Null || (ch.IsArray() && len(ch.Array()) == 0) {
				return false
			}
		}
	case catalog.EPMessages:
		switch {
		case bytes.Equal(ev.Name, evMsgStart):
			s.Result.PromptTokens = max(gjson.GetBytes(ev.Data, "message.usage.input_tokens").Int(), 0)
			if o := gjson.GetBytes(ev.Data, "message.usage.output_tokens"); o.Exists() {
				s.Result.CompletionTokens = max(o.Int(), 0)
			}
		case bytes.Equal(ev.Name, evMsgDelta):
			if o := gjson.GetBytes(ev.Data, "usage.output_tokens"); o.Exists() {
				s.Result.CompletionTokens = max(o.Int(), 0)
			}
		case bytes.Equal(ev.Name, evMsgStop):
			s.Result.Done = true
		}
	case catalog.EPResponses:
		if bytes.Equal(ev.Name, evRespDone) || bytes.Equal(ev.Name, evRespFail) || bytes.Equal(ev.Name, evRespInc) {
			if u := gjson.GetBytes(ev.Data, "response.usage"); u.IsObject() {
				s.Result.PromptTokens, s.Result.CompletionTokens, _ = usageOf(s.e, u)
			}
			s.Result.Done = bytes.Equal(ev.Name, evRespDone)
			if !s.Result.Done {
				s.Result.Err = errors.New("proxy: upstream response " + string(ev.Name))
			}
		}
	}
	return true
}

// Close stops the stream: an unfinished upstream body closes its connection (cancelling the
// upstream's work); a finished one returns the connection to the pool.
func (s *Stream) Close() {
	if s.timer != nil {
		s.timer.Stop()
	}
	if !s.Result.Done || s.Result.Err != nil {
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
