package relay

import (
	"bufio"
	"errors"
	"io"
	"sync"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/attempt"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/sse"
	"github.com/sekgate/gateway/dataplane/tokens"
	"github.com/sekgate/gateway/dataplane/translate"
)

// Relayed is what the client received of a stream. The client's protocol decides when its
// stream is complete, so the relay owns these; what the upstream reported (usage, its
// errors) is the stream's (proxy.StreamResult).
type Relayed struct {
	// Done is set once the client's last event was written: the upstream's own for a
	// same-protocol stream, the translator's after the upstream's [DONE] otherwise.
	Done bool
	// Gone is set when writing to the client failed (disconnect).
	Gone bool
	// Events counts events written to the client.
	Events int
	// Out is the generated output delivered to the client (proxy.Stream.Delivered): a
	// record charges at least its tokens.
	Out tokens.Delivered
	// Err is why the client's stream could not be completed although the upstream's
	// could (a translator refusing a chunk, a translated response ending incomplete).
	Err error
	// Ended is set once the client received an event that ends its stream other than the
	// successful last one (a translated response.incomplete, the drain's error event).
	Ended bool
	// tr is a translated stream's translator, which writes the client's error event.
	tr streamTranslator
}

// Stream answers with the committed stream of ex (its first event already read),
// translated or passed through, and records the request when the stream ends.
func (s *Relayer) Stream(ctx *fasthttp.RequestCtx, ex *attempt.Exchange, proto Protocol) {
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("text/event-stream")
	ctx.Response.Header.Set("Cache-Control", "no-cache")
	ctx.Response.Header.Set("X-Accel-Buffering", "no")
	ex.Started() // before the 200 and X-Request-Id leave: no request ID without a record
	b := bodyPool.Get().(*streamBody)
	b.s, b.ex, b.proto = s, ex, proto
	ctx.Response.SetBodyStream(b, -1)
}

// streamBody is a committed stream as its response's body. fasthttp writes it with WriteTo
// (it is a fasthttp.BodyWriterTo) from the connection's own goroutine, one chunk and one
// flush per Write, so every event goes straight to the client's socket; a body stream
// writer (SetBodyStreamWriter) would relay from a goroutine of its own through an in-memory
// pipe, a hand-off and a copy per event. fasthttp closes the body whether or not it wrote
// it: Close relays a stream fasthttp never wrote (the client's connection failed before),
// so that it is finished and recorded all the same.
type streamBody struct {
	s     *Relayer
	ex    *attempt.Exchange
	proto Protocol
}

var bodyPool = sync.Pool{New: func() any { return new(streamBody) }}

// clientBufs are the relay's buffers over fasthttp's chunk writer: each flush is one chunk.
var clientBufs = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4<<10) }}

var errBodyRead = errors.New("server: a stream's body is written with WriteTo, not read")

// SupportsBodyWriteTo tells fasthttp to write the body with WriteTo.
func (b *streamBody) SupportsBodyWriteTo() bool { return true }

// Read is never called: fasthttp writes a body that supports WriteTo with WriteTo.
func (b *streamBody) Read([]byte) (int, error) { return 0, errBodyRead }

// WriteTo relays the stream to w.
func (b *streamBody) WriteTo(w io.Writer) (int64, error) {
	b.relay(w)
	return 0, nil
}

// Close finishes a stream WriteTo did not relay, and returns b to its pool.
func (b *streamBody) Close() error {
	b.relay(errWriter{})
	*b = streamBody{}
	bodyPool.Put(b)
	return nil
}

func (b *streamBody) relay(w io.Writer) {
	ex := b.ex
	if ex == nil {
		return // relayed already
	}
	b.ex = nil
	bw := clientBufs.Get().(*bufio.Writer)
	bw.Reset(w)
	b.s.tracked(bw, ex, b.proto)
	_ = bw.Flush() // the stream's last event, held until its record was written
	bw.Reset(nil)
	clientBufs.Put(bw)
}

// errWriter is the client of a response that was never written: it is gone.
type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, errClientGone }

// streamTranslator is the part of translate's stream translators the relay drives.
type streamTranslator interface {
	Feed(chunk []byte) error
	Finish() error
	// Fail ends the client's stream with its protocol's error event carrying msg.
	Fail(msg string) error
}

// clientWriter writes events to the client, one flush per event, and keeps count.
type clientWriter struct {
	w *bufio.Writer
	r Relayed
	// completed says the last translated event written was response.completed.
	completed bool
	// hold keeps the stream's closing events in the buffer: they reach the client after the
	// request's record is written (streamBody.relay flushes), so a node killed in between
	// never leaves a client holding a complete answer whose record was never written.
	hold bool
}

// raw writes an upstream event byte for byte.
func (cw *clientWriter) raw(ev []byte) bool {
	_, _ = cw.w.Write(ev)
	return cw.flush()
}

// event writes a translated event.
func (cw *clientWriter) event(name, data []byte) error {
	w := cw.w
	_, _ = w.WriteString("event: ")
	_, _ = w.Write(name)
	_, _ = w.WriteString("\ndata: ")
	_, _ = w.Write(data)
	_, _ = w.WriteString("\n\n")
	if !cw.flush() {
		return errClientGone
	}
	cw.completed = string(name) == sse.ResponseCompleted
	return nil
}

func (cw *clientWriter) flush() bool {
	if cw.hold {
		cw.r.Events++ // written; flushed once the record is (streamBody.relay)
		return true
	}
	if err := cw.w.Flush(); err != nil {
		cw.r.Gone = true
		return false
	}
	cw.r.Events++
	return true
}

// relay writes the upstream stream st to the client in the client's protocol, flushing
// after every event, until the upstream ends or fails or the client goes away; it returns
// right after the client's last event (a client must not wait on an upstream that keeps
// its connection open). Same-protocol streams pass byte for byte; on a translated route each
// chat completions chunk goes to the client protocol's translator, which writes each
// translated event as soon as it is produced, and the last event is written only after the
// upstream's [DONE], so a client whose stream breaks earlier knows its output is
// incomplete. Keep-alive comments pass on same-protocol streams (a translated stream has
// its own pacing).
func (p Protocol) Relay(w *bufio.Writer, st *proxy.Stream) Relayed {
	if !p.Translate {
		cw := clientWriter{w: w} // stays on the stack: nothing keeps it
		return p.relayLoop(&cw, st, nil)
	}
	cw := &clientWriter{w: w}
	var tr streamTranslator
	if p.Client == index.EPResponses {
		tr = translate.NewChatToResponsesStream(p.Model, cw.event).Configure(p.Opt)
	} else {
		tr = translate.NewChatToMessagesStream(p.Model, cw.event).Configure(p.Opt)
	}
	cw.r.tr = tr
	return p.relayLoop(cw, st, tr)
}

// relayLoop is relay's one loop; tr is nil for a same-protocol stream.
func (p Protocol) relayLoop(cw *clientWriter, st *proxy.Stream, tr streamTranslator) Relayed {
	for {
		ev, err := st.Next()
		if err != nil {
			return cw.r // st.Result.Err holds the upstream failure
		}
		if p.pastBound(st, &cw.r) {
			return cw.r // outbound.go: the event is not sent
		}
		cw.hold = st.Result.Ended // the closing events wait for the record (streamBody.relay)
		switch {
		case tr == nil:
			if !cw.raw(ev.Raw) {
				return cw.r
			}
		case st.Result.Ended: // the upstream's [DONE]
			if err := tr.Finish(); err != nil {
				if !cw.r.Gone {
					cw.r.Err = err
				}
				return cw.r
			}
			if p.Client == index.EPResponses && !cw.completed {
				// response.incomplete (output limit, content filter) ends the stream
				// properly but is a failure signal of the protocol, as on native routes.
				cw.r.Err = errResponseNotCompleted
				cw.r.Ended = true
				return cw.r
			}
		case ev.Data == nil:
			continue // a comment (keep-alive)
		default:
			if err := tr.Feed(ev.Data); err != nil {
				if !cw.r.Gone {
					cw.r.Err = err
				}
				return cw.r
			}
		}
		cw.r.Out = st.Delivered() // written
		if st.Result.Ended {
			cw.r.Done = st.Result.Err == nil
			return cw.r
		}
	}
}
