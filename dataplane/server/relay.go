package server

import (
	"bufio"
	"bytes"
	"errors"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/translate"
)

// relay writes the upstream stream st to the client, flushing after every event, and leaves
// what happened in st.Result: billed usage, Done once the client's terminal event was
// written, ClientGone, Err and Events. Same-protocol streams pass byte for byte.
func (p protocol) relay(w *bufio.Writer, st *proxy.Stream) {
	switch {
	case p.translate:
		p.relayTranslated(w, st)
	case p.client == index.EPMessages:
		relayMessages(w, st)
	default:
		st.Relay(w)
	}
}

// streamTranslator is the part of translate's stream translators the relay drives.
type streamTranslator interface {
	Feed(chunk []byte) error
	Finish() error
	Usage() translate.Usage
}

// eventWriter writes translated events to the client, one flush per event.
type eventWriter struct {
	w      *bufio.Writer
	gone   bool
	events int
	last   string // name of the last event written
}

func (ew *eventWriter) write(name, data []byte) error {
	w := ew.w
	_, _ = w.WriteString("event: ")
	_, _ = w.Write(name)
	_, _ = w.WriteString("\ndata: ")
	_, _ = w.Write(data)
	_, _ = w.WriteString("\n\n")
	if err := w.Flush(); err != nil {
		ew.gone = true
		return err
	}
	ew.events++
	ew.last = string(name)
	return nil
}

var doneData = []byte("[DONE]")

var errResponseNotCompleted = errors.New("translated response ended incomplete")

// relayTranslated feeds each chat completions chunk to the client protocol's translator,
// which writes (and flushes) each translated event as soon as it is produced. The terminal
// event is written only after the upstream's [DONE]; a stream that breaks earlier ends
// without it, so the client knows its output is incomplete. Usage is read by the stream
// from the upstream's usage chunks (the translated request always asks for them).
func (p protocol) relayTranslated(w *bufio.Writer, st *proxy.Stream) {
	ew := &eventWriter{w: w}
	var tr streamTranslator
	if p.client == index.EPResponses {
		tr = translate.NewChatToResponsesStream(p.model, ew.write)
	} else {
		tr = translate.NewChatToMessagesStream(p.model, ew.write)
	}
	defer func() {
		// Usage is the stream's own (proxy.Stream reads and bounds the upstream's chat usage,
		// the same chunks the translator reads).
		st.Result.Events = ew.events
		st.Result.ClientGone = ew.gone
	}()
	st.Result.Done = false
	for {
		ev, err := st.Next()
		if err != nil {
			st.Result.Done = false
			return // st.Result.Err holds the upstream failure
		}
		if ev.Data == nil {
			continue // a comment (keep-alive): the translated stream has its own pacing
		}
		if bytes.Equal(ev.Data, doneData) {
			st.Result.Done = false
			if err := tr.Finish(); err != nil {
				if !ew.gone {
					st.Result.Err = err
				}
				return
			}
			if p.client == index.EPResponses && ew.last != "response.completed" {
				// response.incomplete (output limit, content filter) ends the stream
				// properly but is a failure signal of the protocol, as on native routes.
				st.Result.Err = errResponseNotCompleted
				return
			}
			st.Result.Done = true
			return
		}
		if err := tr.Feed(ev.Data); err != nil {
			if !ew.gone {
				st.Result.Err = err
			}
			return
		}
	}
}

// relayMessages relays a native Messages-style stream byte for byte, flushing per event;
// the stream meters it from message_start and message_delta. It returns right after
// message_stop.
func relayMessages(w *bufio.Writer, st *proxy.Stream) {
	for {
		ev, err := st.Next()
		if err != nil {
			return
		}
		if !st.Write(w, ev) || st.Result.Done {
			return
		}
	}
}
