package translate

import (
	"strings"

	"github.com/tidwall/gjson"
)

// deltaSink is what a streaming translator does with one chat choice's delta: its
// reasoning, its text, its tool-call fragments. The strings point into the chunk
// (parseChunk): reasoning, text and args are written out at once, and a sink
// that keeps args for later clones them; id and name come cloned.
type deltaSink interface {
	reasoning(t string) error
	text(t string) error
	toolDelta(idx int, id, name, args string) error
}

// chunkMembers are the members of a chat chunk the stream translators read, found in one
// pass over its members (each the first of its name, as gjson's Get finds it; a Get per
// member would pass over the chunk once each, and error and usage are usually absent, so
// whole passes).
type chunkMembers struct{ err, usage, choices gjson.Result }

func readChunk(root gjson.Result) (m chunkMembers) {
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "error":
			first(&m.err, v)
		case "usage":
			first(&m.usage, v)
		case "choices":
			first(&m.choices, v)
		}
		return true
	})
	return m
}

// choiceMembers are the members of a streamed chat choice the translators read, and of its
// delta, found in one pass each.
type choiceMembers struct {
	index, finish, content, toolCalls gjson.Result
	stop, reasoning                   string // the dialect's stop-string and reasoning members
}

func readChoice(c gjson.Result, o *Options) (m choiceMembers) {
	var delta gjson.Result
	c.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "index":
			first(&m.index, v)
		case "delta":
			first(&delta, v)
		case "finish_reason":
			first(&m.finish, v)
		}
		return true
	})
	if m.finish.Type == gjson.String {
		m.stop = o.stopString(c)
	}
	if delta.IsObject() {
		delta.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "content":
				first(&m.content, v)
			case "tool_calls":
				first(&m.toolCalls, v)
			}
			return true
		})
		m.reasoning = o.reasoningOf(delta)
	}
	return m
}

// first sets *r to v unless a member of the same name came before.
func first(r *gjson.Result, v gjson.Result) {
	if !r.Exists() {
		*r = v
	}
}

// feedChoice hands one streamed chat choice's text, then its tool-call fragments in order,
// to sink, and returns its finish_reason and stop_reason when it has a finish_reason (ok).
// A tool call's index is its "index" field, else its position in the delta.
func feedChoice(c choiceMembers, sink deltaSink) (finish, stop string, ok bool, err error) {
	if c.reasoning != "" {
		if err := sink.reasoning(c.reasoning); err != nil {
			return "", "", false, err
		}
	}
	if t := c.content; t.Type == gjson.String && t.Str != "" {
		if err := sink.text(t.Str); err != nil {
			return "", "", false, err
		}
	}
	if !c.toolCalls.IsArray() {
		c.toolCalls = gjson.Result{} // null (SGLang sends "tool_calls": null) is absent
	}
	c.toolCalls.ForEach(func(k, tc gjson.Result) bool {
		if !tc.IsObject() {
			return true
		}
		idx := int(k.Int())
		if i := tc.Get("index"); i.Type == gjson.Number {
			idx = int(i.Int())
		}
		err = sink.toolDelta(idx, strings.Clone(tc.Get("id").Str), strings.Clone(tc.Get("function.name").Str),
			tc.Get("function.arguments").Str)
		return err == nil
	})
	if err != nil {
		return "", "", false, err
	}
	if f := c.finish; f.Type == gjson.String {
		return strings.Clone(f.Str), strings.Clone(c.stop), true, nil
	}
	return "", "", false, nil
}

// firstChoice calls choice with each element of choices whose index is 0 (only the first
// choice is translated), stopping at the first error.
func firstChoice(choices gjson.Result, o *Options, choice func(choiceMembers) error) error {
	var err error
	if !choices.IsArray() {
		return nil // absent or null
	}
	choices.ForEach(func(_, c gjson.Result) bool {
		m := readChoice(c, o)
		if m.index.Int() != 0 {
			return true
		}
		err = choice(m)
		return err == nil
	})
	return err
}
