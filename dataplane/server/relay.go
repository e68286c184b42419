package server

import (
	"bufio"
	"bytes"
	"errors"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/catalog"
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
	case p.client == catalog.EPMessages:
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
// without it, so the client knows its output is incomplete. Usage is the translator's, taken
// from the upstream's final usage chunk (the translated request always asks for it).
func (p protocol) relayTranslated(w *bufio.Writer, st *proxy.Stream) {
	ew := &eventWriter{w: w}
	var tr streamTranslator
	if p.client == catalog.EPResponses {
		tr = translate.NewChatToResponsesStream(p.model, ew.write)
	} else {
		tr = translate.NewChatToMessagesStream(p.model, ew.write)
	}
	defer func() {
		u := tr.Usage()
		st.Result.PromptTokens, st.Result.CompletionTokens = u.InputTokens, u.OutputTokens
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
			if p.client == catalog.EPResponses && ew.last != "response.completed" {
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

// messagesUsage accumulates the usage of a Messages-style stream: message_start carries the
// input side (input_tokens and the cache counts beside it), message_delta the cumulative
// output_tokens (and, from newer servers, cumulative input counts). Each field keeps its
// latest value; billing follows translate.UsageFromMessages (cache reads and writes are
// input).
type messagesUsage struct {
	in, cacheWrite, cacheRead, out int64
}

func (m *messagesUsage) update(u gjson.Result) {
	if !u.IsObject() {
		return
	}
	set := func(dst *int64, key string) {
		if v := u.Get(key); v.Type == gjson.Number {
			*dst = max(v.Int(), 0)
		}
	}
	set(&m.in, "input_tokens")
	set(&m.cacheWrite, "cache_creation_input_tokens")
	set(&m.cacheRead, "cache_read_input_tokens")
	set(&m.out, "output_tokens")
}

func (m *messagesUsage) billed() translate.Usage {
	return translate.Usage{InputTokens: m.in + m.cacheWrite + m.cacheRead, OutputTokens: m.out}
}

var (
	evMessageStart = []byte("message_start")
	evMessageDelta = []byte("message_delta")
)

// relayMessages relays a native Messages-style stream byte for byte, flushing per event,
// and meters it from message_start and message_delta. It returns right after message_stop.
func relayMessages(w *bufio.Writer, st *proxy.Stream) {
	var mu messagesUsage
	defer func() {
		u := mu.billed()
		st.Result.PromptTokens, st.Result.CompletionTokens = u.InputTokens, u.OutputTokens
	}()
	for {
		ev, err := st.Next()
		if err != nil {
			return
		}
		switch {
		case bytes.Equal(ev.Name, evMessageStart):
			mu.update(gjson.GetBytes(ev.Data, "message.usage"))
		case bytes.Equal(ev.Name, evMessageDelta):
			mu.update(gjson.GetBytes(ev.Data, "usage"))
		}
		if _, err := w.Write(ev.Raw); err != nil {
			st.Result.ClientGone = true
			return
		}
		if err := w.Flush(); err != nil {
			st.Result.ClientGone = true
			return
		}
		st.Result.Events++
		if st.Result.Done {
			return
		}
	}
}
