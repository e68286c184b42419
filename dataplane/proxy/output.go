package proxy

import (
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/reqparse"
)

// A chat or text completion chunk counts toward the output estimate only for the choices
// that carry generated output: a delta with a non-empty content, reasoning,
// reasoning_content or refusal, a tool call (or legacy function_call) with a non-empty
// name or arguments, or a completion choice with non-empty text. Chunks that carry none
// are not counted: a first chunk announcing the role (vLLM, SGLang, llama.cpp), Ollama's
// last chunk with only finish_reason and an empty content (ollama openai/openai.go sends
// role "assistant" in every delta), SGLang's nulls, a usage-only chunk.

// chunkOutputs returns how many choices of a chat (or, with text, a text completion)
// chunk carry output, from the raw value of the chunk's choices member (valid JSON; nil
// when the chunk has none). It reads the choices once and stops reading a choice's delta
// at the first output; a key with an escape (which might spell a member's name) makes
// it ask gjson instead.
func chunkOutputs(choices []byte, text bool) int64 {
	w := walker{b: choices}
	n, ok := w.choices(text)
	if !ok {
		return chunkOutputsSlow(choices, text)
	}
	return n
}

// walker reads valid JSON without allocating; it never indexes past b, whatever b holds.
type walker struct {
	b       []byte
	i       int
	escaped bool // a key with an escape was met
}

func (w *walker) ws() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// at reports whether the next byte (whitespace skipped) is c.
func (w *walker) at(c byte) bool {
	w.ws()
	return w.i < len(w.b) && w.b[w.i] == c
}

// str reads the string at w.i (its opening quote) and returns its contents, raw, and
// whether they have an escape. Byte by byte: the strings of a chunk are short.
func (w *walker) str() (s []byte, escaped bool) {
	start := w.i + 1
	for j := start; j < len(w.b); j++ {
		switch w.b[j] {
		case '"':
			w.i = j + 1
			return w.b[start:j], escaped
		case '\\':
			escaped = true
			j++
		}
	}
	w.i = len(w.b)
	return nil, escaped
}

// skip reads past the value at w.i.
func (w *walker) skip() {
	w.ws()
	if w.i >= len(w.b) {
		return
	}
	switch w.b[w.i] {
	case '"':
		w.str()
		return
	case '{', '[':
		w.i = reqparse.ValueEnd(w.b, w.i)
	default:
		w.i++ // a number or literal's first byte (anything, in invalid JSON: always move on)
		for w.i < len(w.b) {
			switch w.b[w.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return
			}
			w.i++
		}
	}
}

// rest reads past the end of the object or array being read (w.i inside it, at a
// member or element or the comma or bracket after one), byte by byte in one loop.
func (w *walker) rest() {
	b, depth := w.b, 1
	for i := w.i; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				w.i = i + 1
				return
			}
		}
	}
	w.i = len(b)
}

// member moves to the next member of the object being read (w.i at its '{' or after a
// member's value) and returns its key, with w.i at its value; ok is false at the end of
// the object (w.i then past it).
func (w *walker) member() (key []byte, ok bool) {
	w.ws()
	if w.i >= len(w.b) {
		return nil, false
	}
	if c := w.b[w.i]; c == '{' || c == ',' {
		w.i++
		w.ws()
	}
	if w.i >= len(w.b) || w.b[w.i] != '"' {
		w.i++ // the closing '}'
		return nil, false
	}
	key, esc := w.str()
	w.escaped = w.escaped || esc
	w.ws()
	w.i++ // the colon
	w.ws()
	return key, true
}

// element moves to the next element of the array being read (w.i at its '[' or after an
// element); ok is false at its end (w.i then past it).
func (w *walker) element() bool {
	w.ws()
	if w.i >= len(w.b) {
		return false
	}
	if c := w.b[w.i]; c == '[' || c == ',' {
		w.i++
		w.ws()
	}
	if w.i >= len(w.b) || w.b[w.i] == ']' {
		w.i++
		return false
	}
	return true
}

// text reports whether the value at w.i is a non-empty string, and reads past it.
func (w *walker) text() bool {
	if !w.at('"') {
		w.skip()
		return false
	}
	v, _ := w.str()
	return len(v) > 0
}

// choices counts the choices with output; ok is false when a key had an escape.
func (w *walker) choices(text bool) (n int64, ok bool) {
	if !w.at('[') {
		return 0, true // absent, null or not an array: no choices
	}
	for w.element() {
		if !w.at('{') {
			w.skip()
			continue
		}
		out, seen := false, false // the first member of its name counts, as gjson reads
		for {
			k, more := w.member()
			if !more {
				break
			}
			switch {
			case !seen && text && string(k) == "text":
				out, seen = w.text(), true
			case !seen && !text && string(k) == "delta":
				out, seen = w.delta(), true
			default:
				w.skip()
				continue
			}
			if out {
				w.rest() // the rest of the choice
				break
			}
		}
		if out {
			n++
		}
	}
	return n, !w.escaped
}

// delta reports whether the chat delta at w.i carries output, and reads past it.
func (w *walker) delta() bool {
	if !w.at('{') {
		w.skip()
		return false
	}
	out := false
	var seen uint8 // the members read: the first of its name counts, as gjson reads
	for {
		k, more := w.member()
		if !more {
			return out
		}
		bit := uint8(0)
		switch string(k) {
		case "content":
			bit = 1
		case "reasoning":
			bit = 2
		case "reasoning_content":
			bit = 4
		case "refusal":
			bit = 8
		case "tool_calls":
			bit = 16
		case "function_call":
			bit = 32
		}
		if bit == 0 || seen&bit != 0 {
			w.skip()
			continue
		}
		seen |= bit
		switch bit {
		case 16:
			out = w.toolCalls()
		case 32:
			out = w.function()
		default:
			out = w.text()
		}
		if out {
			w.rest() // the rest of the delta
			return true
		}
	}
}

// toolCalls reports whether the tool_calls array at w.i has a call with a name or
// arguments, and reads past it.
func (w *walker) toolCalls() bool {
	if !w.at('[') {
		w.skip()
		return false
	}
	out := false
	for w.element() {
		if out || !w.at('{') {
			w.skip()
			continue
		}
		seen := false
		for {
			k, more := w.member()
			if !more {
				break
			}
			if !seen && string(k) == "function" {
				out, seen = w.function(), true
			} else {
				w.skip()
			}
		}
	}
	return out
}

// function reports whether the function object at w.i has a non-empty name or arguments,
// and reads past it.
func (w *walker) function() bool {
	if !w.at('{') {
		w.skip()
		return false
	}
	out := false
	var seen uint8
	for {
		k, more := w.member()
		if !more {
			return out
		}
		bit := uint8(0)
		switch string(k) {
		case "name":
			bit = 1
		case "arguments":
			bit = 2
		}
		if out || bit == 0 || seen&bit != 0 {
			w.skip()
			continue
		}
		seen |= bit
		out = w.text()
	}
}

// chunkOutputsSlow is chunkOutputs read with gjson (which reads escaped keys unescaped).
func chunkOutputsSlow(choices []byte, text bool) int64 {
	var n int64
	nonEmpty := func(r gjson.Result) bool { return r.Type == gjson.String && r.Str != "" }
	fn := func(f gjson.Result) bool { return nonEmpty(f.Get("name")) || nonEmpty(f.Get("arguments")) }
	ch := gjson.Parse(unsafe.String(unsafe.SliceData(choices), len(choices)))
	if !ch.IsArray() {
		return 0
	}
	ch.ForEach(func(_, c gjson.Result) bool {
		if text {
			if nonEmpty(c.Get("text")) {
				n++
			}
			return true
		}
		d := c.Get("delta")
		out := nonEmpty(d.Get("content")) || nonEmpty(d.Get("reasoning")) || nonEmpty(d.Get("reasoning_content")) ||
			nonEmpty(d.Get("refusal")) || fn(d.Get("function_call"))
		if tcs := d.Get("tool_calls"); !out && tcs.IsArray() {
			tcs.ForEach(func(_, tc gjson.Result) bool {
				out = fn(tc.Get("function"))
				return !out
			})
		}
		if out {
			n++
		}
		return true
	})
	return n
}
