// Package respcheck reads a Responses event stream the way the official OpenAI SDKs'
// stream helpers accumulate it (openai-node's ResponseStream and its response
// accumulator), and reports the first event where they would throw: an output item
// announced out of order, a delta for a content part never added ("missing content at
// index 0"), an event naming the wrong item or item type, an event type the helpers do
// not know. Tests of every producer of Responses streams (the translation, the data
// plane, the simulator) feed their streams through it.
package respcheck

import (
	"encoding/json"
	"fmt"
)

// Item is an output item as the stream built it.
type Item struct {
	Type      string // message, reasoning, function_call
	ID        string
	CallID    string
	Name      string
	Parts     []Part // content parts of a message or reasoning item
	Arguments string // a function call's
	Done      bool   // response.output_item.done was seen
}

// Part is a content part: output_text or refusal in a message, reasoning_text in a
// reasoning item.
type Part struct {
	Type string
	Text string
}

// Text is the concatenated text of the item's parts.
func (it Item) Text() string {
	var s string
	for _, p := range it.Parts {
		s += p.Text
	}
	return s
}

// Stream accumulates one Responses stream. Its zero value is ready to use.
type Stream struct {
	seq      int64
	started  bool
	terminal string // the terminal event's type, once seen
	items    []*Item
	ids      map[string]bool
	final    json.RawMessage
}

// Items returns the output items accumulated so far.
func (s *Stream) Items() []Item {
	out := make([]Item, len(s.items))
	for i, it := range s.items {
		out[i] = *it
	}
	return out
}

// Terminal returns the terminal event's type (response.completed, response.incomplete or
// response.failed) and its response object; "" before one arrived.
func (s *Stream) Terminal() (string, json.RawMessage) { return s.terminal, s.final }

// known are the event types the SDK helpers accept (others make them throw).
var known = map[string]bool{
	"response.created": true, "response.queued": true, "response.in_progress": true,
	"response.completed": true, "response.failed": true, "response.incomplete": true,
	"response.output_item.added": true, "response.output_item.done": true,
	"response.content_part.added": true, "response.content_part.done": true,
	"response.output_text.delta": true, "response.output_text.done": true,
	"response.output_text.annotation.added": true,
	"response.refusal.delta":                true, "response.refusal.done": true,
	"response.function_call_arguments.delta": true, "response.function_call_arguments.done": true,
	"response.reasoning_text.delta": true, "response.reasoning_text.done": true,
	"response.reasoning_summary_part.added": true, "response.reasoning_summary_part.done": true,
	"response.reasoning_summary_text.delta": true, "response.reasoning_summary_text.done": true,
	"error": true, "keepalive": true,
}

// event is the union of the members the checks read.
type event struct {
	Type           string          `json:"type"`
	SequenceNumber *int64          `json:"sequence_number"`
	ItemID         *string         `json:"item_id"`
	OutputIndex    *int            `json:"output_index"`
	ContentIndex   *int            `json:"content_index"`
	Delta          string          `json:"delta"`
	Text           *string         `json:"text"`
	Arguments      *string         `json:"arguments"`
	Refusal        *string         `json:"refusal"`
	Item           json.RawMessage `json:"item"`
	Part           *rawPart        `json:"part"`
	Response       json.RawMessage `json:"response"`
}

type rawPart struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Refusal string `json:"refusal"`
}

type rawItem struct {
	ID        *string   `json:"id"`
	Type      string    `json:"type"`
	CallID    string    `json:"call_id"`
	Name      string    `json:"name"`
	Arguments string    `json:"arguments"`
	Content   []rawPart `json:"content"`
}

// Add reads one event: name is the SSE event name ("" when the stream sends none), data
// its data.
func (s *Stream) Add(name string, data []byte) error {
	var e event
	if err := json.Unmarshal(data, &e); err != nil {
		return fmt.Errorf("event %s: %w", name, err)
	}
	if name != "" && name != e.Type {
		return fmt.Errorf("SSE event %q carries type %q", name, e.Type)
	}
	if !known[e.Type] {
		return fmt.Errorf("unhandled response stream event %q", e.Type)
	}
	if e.SequenceNumber == nil || *e.SequenceNumber != s.seq {
		return fmt.Errorf("%s: sequence_number %s, want %d", e.Type, show(e.SequenceNumber), s.seq)
	}
	s.seq++
	if s.terminal != "" {
		return fmt.Errorf("%s after %s", e.Type, s.terminal)
	}
	if !s.started {
		if e.Type != "response.created" {
			return fmt.Errorf("expected 'response.created' event first, got %s", e.Type)
		}
		s.started = true
	}
	switch e.Type {
	case "response.created", "response.queued", "response.in_progress":
		return nil
	case "response.completed", "response.incomplete", "response.failed":
		return s.finish(&e)
	case "response.output_item.added":
		return s.added(&e)
	case "response.output_item.done":
		return s.itemDone(&e)
	case "error", "keepalive":
		return nil
	}
	return s.scoped(&e)
}
