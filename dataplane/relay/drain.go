package relay

import (
	"bufio"
	"sync"

	"github.com/sekgate/gateway/dataplane/attempt"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/apierror"
)

// Drain events in each client protocol, as streamEndEvent's.
var (
	drainErrChat      = []byte("data: " + string(ErrShuttingDown.JSON(false)) + "\n\n")
	drainErrMessages  = []byte("event: error\ndata: " + string(ErrShuttingDown.JSON(true)) + "\n\n")
	drainErrResponses = []byte(`event: error` + "\n" + `data: {"type":"error","code":"` + apierror.CodeNotReady +
		`","message":"` + ErrShuttingDown.Message + `","param":null}` + "\n\n")
)

func drainEvent(e index.Endpoint) []byte {
	switch e {
	case index.EPMessages:
		return drainErrMessages
	case index.EPResponses:
		return drainErrResponses
	}
	return drainErrChat
}

// streamSet holds the streams being relayed, so that a node at the end of its drain
// timeout can end them (EndStreams) instead of cutting their connections.
type streamSet struct {
	mu     sync.Mutex
	open   map[*attempt.Exchange]bool // value: ended by EndStreams
	closed bool                       // EndStreams ran: a stream that starts now ends at once
}

// add registers a committed stream before its relay starts.
func (ss *streamSet) add(ex *attempt.Exchange) {
	ss.mu.Lock()
	if ss.open == nil {
		ss.open = make(map[*attempt.Exchange]bool)
	}
	ss.open[ex] = ss.closed
	if ss.closed {
		ex.Cancel()
	}
	ss.mu.Unlock()
}

// remove unregisters a stream whose relay returned and reports whether EndStreams ended it.
func (ss *streamSet) remove(ex *attempt.Exchange) bool {
	ss.mu.Lock()
	ended := ss.open[ex]
	delete(ss.open, ex)
	ss.mu.Unlock()
	return ended
}

// EndStreams ends every stream still being relayed, and any that starts later: the
// upstream exchange is cancelled, the client gets an error event in its protocol (code
// not_ready) and the request is recorded as cancelled with the usage delivered so far. The
// node calls it when its drain timeout runs out. It returns the number of streams ended.
func (s *Relayer) EndStreams() int {
	ss := &s.streams
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.closed = true
	n := 0
	for ex, ended := range ss.open {
		if !ended {
			ss.open[ex] = true
			ex.Cancel()
			n++
		}
	}
	return n
}

// OpenStreams returns the number of streams being relayed.
func (s *Relayer) OpenStreams() int {
	s.streams.mu.Lock()
	defer s.streams.mu.Unlock()
	return len(s.streams.open)
}

// tracked relays a committed stream as one EndStreams can end, then finishes it.
func (s *Relayer) tracked(w *bufio.Writer, ex *attempt.Exchange, proto Protocol) {
	s.streams.add(ex)
	s.cfg.Telemetry.StreamOpened()
	proto.maxOutput = streamCut(ex) // a stream past the output bound is cut (bound.go)
	proto.bytesPerToken = ex.Model.OutputBytesPerToken
	rel := proto.Relay(w, ex.Stream)
	s.cfg.Telemetry.StreamClosed()
	if s.streams.remove(ex) && !rel.Gone {
		if _, err := w.Write(drainEvent(proto.Client)); err == nil {
			_ = w.Flush()
		}
		rel.Ended = true
	}
	s.end(ex, w, proto.Client, rel)
}
