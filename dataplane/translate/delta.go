package translate

import (
	"strings"

	"github.com/tidwall/gjson"
)

// deltaSink is what a streaming translator does with one chat choice's delta. The strings
// point into the chunk (parseChunk): text and args are written out at once, and a sink
// that keeps args for later clones them; id and name come cloned.
type deltaSink interface {
	text(t string) error
	toolDelta(idx int, id, name, args string) error
}

// feedChoice hands one streamed chat choice's text, then its tool-call fragments in order,
// to sink, and returns its finish_reason and stop_reason when it has a finish_reason (ok).
// A tool call's index is its "index" field, else its position in the delta.
func feedChoice(c gjson.Result, sink deltaSink) (finish, stop string, ok bool, err error) {
	d := c.Get("delta")
	if t := d.Get("content"); t.Type == gjson.String && t.Str != "" {
		if err := sink.text(t.Str); err != nil {
			return "", "", false, err
		}
	}
	d.Get("tool_calls").ForEach(func(k, tc gjson.Result) bool {
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
	if f := c.Get("finish_reason"); f.Type == gjson.String {
		return strings.Clone(f.Str), strings.Clone(stringOnly(c.Get("stop_reason"))), true, nil
	}
	return "", "", false, nil
}

// firstChoice calls choice with each element of the chunk's choices whose index is 0 (only
// the first choice is translated), stopping at the first error.
func firstChoice(chunk gjson.Result, choice func(gjson.Result) error) error {
	var err error
	chunk.Get("choices").ForEach(func(_, c gjson.Result) bool {
		if c.Get("index").Int() != 0 {
			return true
		}
		err = choice(c)
		return err == nil
	})
	return err
}
