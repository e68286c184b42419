package proxy

import (
	"bytes"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/reqparse"
	"github.com/sekgate/gateway/dataplane/tokens"
)

// The output a Messages-style or Responses-style event delivers, in every shape the
// protocols have: a client (an SDK accumulating a message, or a program printing events)
// may read text from any of them, so every one counts, duplicated members included
// (tokens.TextBytes).

// messagesOutput is what a Messages-style event (valid JSON) delivers: the text of every
// member but identifiers, types, stop reasons and usage (tokens.TextBytes), whichever the
// event: a content_block_start's block (text, thinking, a tool's name and input), a
// content_block_delta's text, thinking or partial JSON, text in message_start's content,
// and text in events of unknown types. Each event with text is a piece.
func messagesOutput(data []byte) tokens.Delivered {
	w := walker{b: data}
	n := w.value()
	if n == 0 {
		return tokens.Delivered{}
	}
	return tokens.Delivered{Pieces: 1, Bytes: n}
}

// messagesDelta is messagesOutput of a content_block_delta (valid JSON), read from the
// notes of its scan m when they can tell (ok false: they cannot); nil m reads it whole.
func messagesDelta(data []byte, m *reqparse.EventMembers) (tokens.Delivered, bool) {
	if m == nil {
		return messagesOutput(data), true
	}
	var vals [3][]byte
	if m.Count() != len(vals) || !m.Members(data, deltaMembers[:], vals[:]) || vals[0] == nil || vals[1] == nil || vals[2] == nil {
		return tokens.Delivered{}, false // other members than these: read it whole
	}
	w := walker{b: vals[0]}
	n := w.value()
	if n == 0 {
		return tokens.Delivered{}, true
	}
	return tokens.Delivered{Pieces: 1, Bytes: n}, true
}

// deltaMembers are the members of a content_block_delta: delta, and index and type (which
// carry no text).
var deltaMembers = [3]string{"delta", "index", "type"}

// A Responses-style stream shows each part of its output several times: as deltas, in
// the part's .done event, in content_part.added and .done, in output_item.added and .done,
// and in the response of response.created, .in_progress and .completed. A client may read
// any of them, and an honest server shows the same text in each, so a part of the output
// (a slot: an output item's content part, summary part, arguments or name) counts as the
// most any one kind of view shows of it, and every view of a kind adds up (a server that
// sends two .done events for a part has shown the client both). Text in events of unknown
// types counts in full.

// view is a kind of event that shows a slot.
type view uint8

const (
	viewDelta view = iota
	viewDone
	viewPartAdded
	viewPartDone
	viewItemAdded
	viewItemDone
	viewResponse
	nViews
)

// part is what of an output item a slot holds.
type part uint8

const (
	partContent part = iota
	partSummary
	partArguments
	partOther
)

type slotKey struct {
	item, index int64
	part        part
}

type slot struct {
	key   slotKey
	views [nViews]int64
	best  int64
}

// maxSlots bounds a stream's slots; text past them counts in full.
const maxSlots = 256

// responsesTally is a Responses-style stream's output so far.
type responsesTally struct {
	slots []slot
}

// add takes one event (valid JSON) other than a *.delta (delta) and returns what it
// delivers beyond the events before.
func (t *responsesTally) add(name, data []byte) tokens.Delivered {
	root := gjson.Parse(unsafe.String(unsafe.SliceData(data), len(data)))
	e := readEvent(root)
	var grew int64
	switch {
	case bytes.HasSuffix(name, []byte("_part.added")), bytes.HasSuffix(name, []byte("_part.done")):
		v := viewPartAdded
		if bytes.HasSuffix(name, []byte(".done")) {
			v = viewPartDone
		}
		grew = t.show(e.slot(name), v, e.text(partOther, "part"))
	case string(name) == "response.output_item.added", string(name) == "response.output_item.done":
		v := viewItemAdded
		if bytes.HasSuffix(name, []byte(".done")) {
			v = viewItemDone
		}
		root.ForEach(func(k, item gjson.Result) bool {
			if k.Str == "item" {
				grew += t.item(item, e.output, v)
			}
			return true
		})
	case bytes.HasPrefix(name, []byte("response.")) && bytes.Count(name, []byte(".")) == 1:
		// response.created, .in_progress, .completed, .incomplete, .failed, .queued
		root.ForEach(func(k, resp gjson.Result) bool {
			if k.Str == "response" {
				grew += t.response(resp)
			}
			return true
		})
	case bytes.HasSuffix(name, []byte(".done")):
		// output_text, refusal, reasoning_text, reasoning_summary_text, function call
		// arguments: the part's whole text
		k := e.slot(name)
		grew = t.show(k, viewDone, e.text(k.part, "text", "refusal", "arguments", "delta", "input"))
	default:
		grew = tokens.TextBytes(root) // an event of a type not known here
	}
	if grew == 0 {
		return tokens.Delivered{}
	}
	return tokens.Delivered{Bytes: grew}
}

// response shows the output items of a response object.
func (t *responsesTally) response(resp gjson.Result) int64 {
	var grew int64
	resp.ForEach(func(k, out gjson.Result) bool {
		if k.Str == "output" && out.IsArray() {
			var i int64
			out.ForEach(func(_, item gjson.Result) bool {
				grew += t.item(item, i, viewResponse)
				i++
				return true
			})
		}
		return true
	})
	return grew
}

// item shows output item it (number i) in view v.
func (t *responsesTally) item(it gjson.Result, i int64, v view) int64 {
	if !it.IsObject() {
		return t.show(slotKey{item: i, part: partOther}, v, tokens.TextBytes(it))
	}
	var grew int64
	it.ForEach(func(k, m gjson.Result) bool {
		switch k.Str {
		case "content", "summary":
			p := partContent
			if k.Str == "summary" {
				p = partSummary
			}
			if !m.IsArray() {
				grew += t.show(slotKey{item: i, part: p}, v, tokens.TextBytes(m))
				return true
			}
			var j int64
			m.ForEach(func(_, c gjson.Result) bool {
				grew += t.show(slotKey{item: i, index: j, part: p}, v, tokens.TextBytes(c))
				j++
				return true
			})
		case "arguments", "input":
			grew += t.show(slotKey{item: i, part: partArguments}, v, tokens.ArgValueBytes(m))
		case "name":
			if m.Type == gjson.String {
				grew += t.show(slotKey{item: i, part: partOther}, v, tokens.NameBytes(int64(len(m.Str))))
			}
		default:
			if !tokens.NotText(k.Str) {
				grew += t.show(slotKey{item: i, part: partOther}, v, tokens.TextBytes(m))
			}
		}
		return true
	})
	return grew
}

// show adds n bytes to slot k's view v and returns how much the slot's count grew.
func (t *responsesTally) show(k slotKey, v view, n int64) int64 {
	if n == 0 {
		return 0
	}
	for i := range t.slots {
		if s := &t.slots[i]; s.key == k {
			return s.add(v, n)
		}
	}
	if len(t.slots) >= maxSlots {
		return n
	}
	t.slots = append(t.slots, slot{key: k})
	return t.slots[len(t.slots)-1].add(v, n)
}

func (s *slot) add(v view, n int64) int64 {
	s.views[v] = tokens.Add(s.views[v], n)
	if s.views[v] <= s.best {
		return 0
	}
	grew := s.views[v] - s.best
	s.best = s.views[v]
	return grew
}

// delta takes a *.delta event (valid JSON), read from the notes of its scan m when they
// can tell (ok false: they cannot), whole when m is nil.
func (t *responsesTally) delta(name, data []byte, m *reqparse.EventMembers) (tokens.Delivered, bool) {
	var k slotKey
	var n int64
	if m == nil {
		k, n = readDelta(name, data)
	} else {
		var vals [4][]byte
		if !m.Members(data, responsesDeltaMembers[:], vals[:]) {
			return tokens.Delivered{}, false
		}
		var e event
		for i, dst := range []*int64{&e.output, &e.content, &e.summary} {
			if vals[i] != nil {
				w := walker{b: vals[i]}
				*dst = w.integer()
			}
		}
		k = e.slot(name)
		if vals[3] != nil {
			w := walker{b: vals[3]}
			if k.part == partArguments {
				n = w.argValue()
			} else {
				n = w.value()
			}
		}
	}
	grew := t.show(k, viewDelta, n)
	if n == 0 {
		return tokens.Delivered{}, true
	}
	return tokens.Delivered{Pieces: 1, Bytes: grew}, true
}

// responsesDeltaMembers are the members of a *.delta event read.
var responsesDeltaMembers = [4]string{"output_index", "content_index", "summary_index", "delta"}

// readDelta reads a Responses-style *.delta event (valid JSON) in one pass without
// allocating: the slot it shows (its indexes, the last of each name as a JSON client
// reads them) and the bytes of its delta members (every one counted).
func readDelta(name, data []byte) (slotKey, int64) {
	var e event
	p := partOf(name)
	w := walker{b: data}
	if !w.at('{') {
		return e.slot(name), 0
	}
	var n int64
	for {
		k, more := w.member()
		if !more {
			return e.slot(name), n
		}
		switch string(k) {
		case "output_index":
			e.output = w.integer()
		case "content_index":
			e.content = w.integer()
		case "summary_index":
			e.summary = w.integer()
		case "delta":
			if p == partArguments {
				n = tokens.Add(n, w.argValue())
			} else {
				n = tokens.Add(n, w.value())
			}
		default:
			w.skip()
		}
	}
}

// event is the indexes of a Responses-style event: the last of each name, as a JSON client
// reads them.
type event struct {
	root                     gjson.Result
	output, content, summary int64
}

func readEvent(root gjson.Result) event {
	e := event{root: root}
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "output_index":
			e.output = v.Int()
		case "content_index":
			e.content = v.Int()
		case "summary_index":
			e.summary = v.Int()
		}
		return true
	})
	return e
}

// slot is the slot an event of this name shows.
func (e event) slot(name []byte) slotKey {
	switch partOf(name) {
	case partSummary:
		return slotKey{item: e.output, index: e.summary, part: partSummary}
	case partArguments:
		return slotKey{item: e.output, part: partArguments}
	}
	return slotKey{item: e.output, index: e.content, part: partContent}
}

// partOf is the part of an output item an event of this name shows.
func partOf(name []byte) part {
	switch string(name) {
	case "response.output_text.delta", "response.output_text.done", "response.reasoning_text.delta",
		"response.refusal.delta", "response.content_part.added", "response.content_part.done":
		return partContent
	case "response.function_call_arguments.delta":
		return partArguments
	}
	switch {
	case bytes.Contains(name, []byte("summary")):
		return partSummary
	case bytes.Contains(name, []byte("arguments")), bytes.Contains(name, []byte("input")):
		return partArguments
	}
	return partContent
}

// text is the text of the event's members of the given names, every one counted; a
// slot of arguments counts as tokens.ArgValueBytes.
func (e event) text(p part, names ...string) int64 {
	var n int64
	e.root.ForEach(func(k, v gjson.Result) bool {
		for _, name := range names {
			if k.Str != name {
				continue
			}
			if p == partArguments {
				n = tokens.Add(n, tokens.ArgValueBytes(v))
			} else {
				n = tokens.Add(n, tokens.TextBytes(v))
			}
		}
		return true
	})
	return n
}
