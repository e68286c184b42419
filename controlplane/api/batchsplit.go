package api

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// splitBatch reads a usage batch the way nodes write it, {"node_id":"…","batch_id":"…",
// "records":[…]} with plain IDs, in one validating pass: its records are slices of body,
// as json.RawMessage would hold them. It reports false for any other body (other keys,
// escaped or non-UTF-8 IDs, null, invalid JSON, trailing data); encoding/json then
// decides, so both paths give the same batch, and errors are worded as everywhere else.
func splitBatch(body []byte) (rawBatch, bool) {
	if !gjson.ValidBytes(body) {
		return rawBatch{}, false
	}
	v := gjson.ParseBytes(body)
	if !v.IsObject() {
		return rawBatch{}, false
	}
	var b rawBatch
	var seen uint8
	ok := true
	v.ForEach(func(k, val gjson.Result) bool {
		var bit uint8
		switch k.Raw {
		case `"node_id"`:
			bit, ok = 1, plainID(val, &b.NodeID)
		case `"batch_id"`:
			bit, ok = 2, plainID(val, &b.BatchID)
		case `"records"`:
			bit, ok = 4, val.IsArray()
			if ok {
				b.Records = []json.RawMessage{}
				val.ForEach(func(_, e gjson.Result) bool {
					if e.Index <= 0 || e.Index+len(e.Raw) > len(body) {
						ok = false // no position in body: let encoding/json read it
						return false
					}
					b.Records = append(b.Records, json.RawMessage(body[e.Index:e.Index+len(e.Raw)]))
					return true
				})
			}
		default:
			ok = false
		}
		if seen&bit != 0 {
			ok = false
		}
		seen |= bit
		return ok
	})
	return b, ok && seen&4 != 0
}

// plainID accepts a JSON string without escapes in valid UTF-8: its value is its text.
func plainID(v gjson.Result, dst *string) bool {
	if v.Type != gjson.String || len(v.Raw) < 2 {
		return false
	}
	s := v.Raw[1 : len(v.Raw)-1]
	if strings.IndexByte(s, '\\') >= 0 || !utf8.ValidString(s) {
		return false
	}
	*dst = s
	return true
}
