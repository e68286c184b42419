package respcheck

import (
	"encoding/json"
	"fmt"
	"strings"
)

func (s *Stream) added(e *event) error {
	if e.OutputIndex == nil || *e.OutputIndex != len(s.items) {
		return fmt.Errorf("%s: missing output at index %s (have %d items)", e.Type, show(e.OutputIndex), len(s.items))
	}
	var ri rawItem
	if err := json.Unmarshal(e.Item, &ri); err != nil {
		return fmt.Errorf("%s: item: %w", e.Type, err)
	}
	if ri.ID == nil || *ri.ID == "" {
		return fmt.Errorf("%s: expected a non-empty output item id", e.Type)
	}
	if ri.Type == "function_call" && ri.CallID == "" {
		return fmt.Errorf("%s: expected a non-empty output item call_id", e.Type)
	}
	if s.ids == nil {
		s.ids = map[string]bool{}
	}
	keys := []string{"id:" + *ri.ID}
	if ri.CallID != "" {
		keys = append(keys, "call:"+ri.CallID)
	}
	for _, k := range keys {
		if s.ids[k] {
			return fmt.Errorf("%s: duplicate output item identity %q", e.Type, k)
		}
		s.ids[k] = true
	}
	it := &Item{Type: ri.Type, ID: *ri.ID, CallID: ri.CallID, Name: ri.Name, Arguments: ri.Arguments}
	for _, p := range ri.Content {
		it.Parts = append(it.Parts, Part{p.Type, p.Text + p.Refusal})
	}
	s.items = append(s.items, it)
	return nil
}

func (s *Stream) itemDone(e *event) error {
	if e.OutputIndex == nil || *e.OutputIndex < 0 || *e.OutputIndex >= len(s.items) {
		return fmt.Errorf("%s: missing output at index %s", e.Type, show(e.OutputIndex))
	}
	it := s.items[*e.OutputIndex]
	var ri rawItem
	if err := json.Unmarshal(e.Item, &ri); err != nil {
		return fmt.Errorf("%s: item: %w", e.Type, err)
	}
	switch {
	case it.Done:
		return fmt.Errorf("%s: item %s done twice", e.Type, it.ID)
	case ri.Type != it.Type:
		return fmt.Errorf("%s: expected output item type %q, got %q", e.Type, it.Type, ri.Type)
	case ri.ID == nil || *ri.ID != it.ID:
		return fmt.Errorf("%s: expected output item id %q, got %s", e.Type, it.ID, show(ri.ID))
	case ri.CallID != it.CallID:
		return fmt.Errorf("%s: expected call_id %q, got %q", e.Type, it.CallID, ri.CallID)
	case it.Type == "function_call" && ri.Arguments != it.Arguments:
		return fmt.Errorf("%s: arguments %q, but the deltas made %q", e.Type, ri.Arguments, it.Arguments)
	}
	if it.Type == "message" || it.Type == "reasoning" {
		var got []string
		for _, p := range ri.Content {
			got = append(got, p.Text+p.Refusal)
		}
		var want []string
		for _, p := range it.Parts {
			want = append(want, p.Text)
		}
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
			return fmt.Errorf("%s: content %q, but the parts made %q", e.Type, got, want)
		}
	}
	it.Done = true
	return nil
}

// finish checks the terminal event's response against the items streamed.
func (s *Stream) finish(e *event) error {
	s.terminal, s.final = e.Type, e.Response
	var r struct {
		Status string            `json:"status"`
		Output []json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(e.Response, &r); err != nil {
		return fmt.Errorf("%s: response: %w", e.Type, err)
	}
	if e.Type == "response.failed" {
		return nil
	}
	if len(r.Output) != len(s.items) {
		return fmt.Errorf("%s: %d output items, the stream announced %d", e.Type, len(r.Output), len(s.items))
	}
	for i, raw := range r.Output {
		var ri rawItem
		if err := json.Unmarshal(raw, &ri); err != nil {
			return fmt.Errorf("%s: output %d: %w", e.Type, i, err)
		}
		it := s.items[i]
		if !it.Done {
			return fmt.Errorf("%s: item %s never done", e.Type, it.ID)
		}
		if ri.ID == nil || *ri.ID != it.ID || ri.Type != it.Type {
			return fmt.Errorf("%s: output %d is %s %s, the stream's is %s %s", e.Type, i, ri.Type, show(ri.ID), it.Type, it.ID)
		}
	}
	return nil
}

// itemTypes are the output item types item-scoped events belong to (content parts are
// told by their part).
var itemTypes = map[string]string{
	"response.output_text.delta": "message", "response.output_text.done": "message",
	"response.output_text.annotation.added": "message",
	"response.refusal.delta":                "message", "response.refusal.done": "message",
	"response.function_call_arguments.delta": "function_call", "response.function_call_arguments.done": "function_call",
	"response.reasoning_text.delta": "reasoning", "response.reasoning_text.done": "reasoning",
	"response.reasoning_summary_part.added": "reasoning", "response.reasoning_summary_part.done": "reasoning",
	"response.reasoning_summary_text.delta": "reasoning", "response.reasoning_summary_text.done": "reasoning",
}

// scoped checks and applies an event about one item's content.
func (s *Stream) scoped(e *event) error {
	if e.ItemID == nil || *e.ItemID == "" {
		return fmt.Errorf("%s: expected a non-empty item_id", e.Type)
	}
	if e.OutputIndex == nil || *e.OutputIndex < 0 || *e.OutputIndex >= len(s.items) {
		return fmt.Errorf("%s: missing output at index %s", e.Type, show(e.OutputIndex))
	}
	it := s.items[*e.OutputIndex]
	want := itemTypes[e.Type]
	if e.Part != nil {
		want = "message"
		if e.Part.Type == "reasoning_text" {
			want = "reasoning"
		}
	}
	switch {
	case it.ID != *e.ItemID:
		return fmt.Errorf("%s: expected item_id %q, got %q", e.Type, it.ID, *e.ItemID)
	case it.Type != want:
		return fmt.Errorf("%s: expected output item type %q, got %q", e.Type, want, it.Type)
	case it.Done:
		return fmt.Errorf("%s: item %s after its output_item.done", e.Type, it.ID)
	}
	if it.Type == "function_call" {
		return it.arguments(e)
	}
	return it.content(e)
}

func (it *Item) arguments(e *event) error {
	if strings.HasSuffix(e.Type, ".delta") {
		it.Arguments += e.Delta
		return nil
	}
	if e.Arguments == nil || *e.Arguments != it.Arguments {
		return fmt.Errorf("%s: arguments %s, but the deltas made %q", e.Type, show(e.Arguments), it.Arguments)
	}
	return nil
}

// content applies a content part event, or a text event of a part, to a message or
// reasoning item.
func (it *Item) content(e *event) error {
	if strings.Contains(e.Type, "reasoning_summary") {
		return nil // summaries are not content parts
	}
	if e.ContentIndex == nil {
		return fmt.Errorf("%s: no content_index", e.Type)
	}
	ci := *e.ContentIndex
	if e.Type == "response.content_part.added" {
		if ci != len(it.Parts) {
			return fmt.Errorf("%s: missing content at index %d (have %d parts)", e.Type, ci, len(it.Parts))
		}
		it.Parts = append(it.Parts, Part{e.Part.Type, e.Part.Text + e.Part.Refusal})
		return nil
	}
	if ci < 0 || ci >= len(it.Parts) {
		return fmt.Errorf("%s: missing content at index %d", e.Type, ci)
	}
	p := &it.Parts[ci]
	want := "output_text"
	switch {
	case e.Part != nil:
		want = e.Part.Type
	case strings.HasPrefix(e.Type, "response.reasoning_text"):
		want = "reasoning_text"
	case strings.HasPrefix(e.Type, "response.refusal"):
		want = "refusal"
	}
	if p.Type != want {
		return fmt.Errorf("%s: expected content to be %q, got %q", e.Type, want, p.Type)
	}
	switch {
	case strings.HasSuffix(e.Type, ".delta"):
		p.Text += e.Delta
	case e.Type == "response.content_part.done":
		if e.Part.Text+e.Part.Refusal != p.Text {
			return fmt.Errorf("%s: part text %q, but the deltas made %q", e.Type, e.Part.Text, p.Text)
		}
	case e.Type == "response.output_text.annotation.added":
	case e.Type == "response.refusal.done":
		if e.Refusal == nil || *e.Refusal != p.Text {
			return fmt.Errorf("%s: refusal %s, but the deltas made %q", e.Type, show(e.Refusal), p.Text)
		}
	case e.Text == nil || *e.Text != p.Text:
		return fmt.Errorf("%s: text %s, but the deltas made %q", e.Type, show(e.Text), p.Text)
	}
	return nil
}

// show renders an optional member for a message.
func show[T any](p *T) string {
	if p == nil {
		return "(absent)"
	}
	return fmt.Sprintf("%#v", *p)
}
