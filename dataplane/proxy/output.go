package proxy

import (
	"unicode/utf8"

	"github.com/sekgate/gateway/dataplane/reqparse"
	"github.com/sekgate/gateway/dataplane/tokens"
)

// A chat or text completion chunk delivers output in the choices that carry generated
// text: a delta (or a message, which some servers stream) with a non-empty content,
// reasoning, reasoning_content or refusal, a tool call (or legacy function_call) with a
// non-empty name or arguments, or a completion choice with non-empty text. Each such
// choice is a piece, and the bytes of its text count (tokens.Delivered). Chunks that carry
// none deliver nothing: a first chunk announcing the role (vLLM, SGLang, llama.cpp),
// Ollama's last chunk with only finish_reason and an empty content (ollama
// openai/openai.go sends role "assistant" in every delta), SGLang's nulls, a usage-only
// chunk. A JSON client
// keeps the last, so a chunk with a duplicated member that carries output is malformed
// (chunkOutput). Reasoning sent under both names (the gateway mirrors it for chat
// clients) counts once.

// chunkOutput returns the output a chat (or, with text, a text completion) chunk delivers,
// from the raw value of the chunk's choices member (valid JSON; nil when the chunk has
// none). It reads the choices once, without allocating; a key with an escape is read
// unescaped. ok is false when a member that carries output is duplicated in its object
// (a JSON client keeps the last value, a translator reading the first would not see
// what the client sees): the chunk is malformed.
func chunkOutput(choices []byte, text bool) (d tokens.Delivered, ok bool) {
	w := walker{b: choices}
	d = w.choices(text)
	return d, !w.dup
}

// walker reads valid JSON without allocating; it never indexes past b, whatever b holds.
type walker struct {
	b    []byte
	i    int
	dup  bool     // a member that carries output was duplicated
	kbuf [32]byte // an escaped key, unescaped
}

// once marks bit in seen, and w.dup when it was marked already.
func (w *walker) once(seen *uint8, bit uint8) {
	w.dup = w.dup || *seen&bit != 0
	*seen |= bit
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
// whether they have an escape. Byte by byte: the strings of an event are short.
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
	if esc {
		key = unescapeKey(w.kbuf[:0], key)
	}
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

// text returns the decoded UTF-8 length of the value at w.i when it is a string, the
// length of its JSON when it is an array or object (content parts: counted whole), and 0
// otherwise; it reads past the value.
func (w *walker) text() int64 {
	w.ws()
	if w.i >= len(w.b) {
		return 0
	}
	switch w.b[w.i] {
	case '"':
		v, esc := w.str()
		if esc {
			return decodedLen(v)
		}
		return int64(len(v))
	case '[', '{':
		start := w.i
		w.skip()
		return int64(w.i - start)
	}
	w.skip()
	return 0
}

// choices is the output of the choices array at w.i.
func (w *walker) choices(text bool) (d tokens.Delivered) {
	if !w.at('[') {
		return d // absent, null or not an array: no choices
	}
	for w.element() {
		if !w.at('{') {
			w.skip()
			continue
		}
		var n int64
		var seen uint8
		for {
			k, more := w.member()
			if !more {
				break
			}
			switch {
			case text && string(k) == "text":
				w.once(&seen, 1)
				n += w.text()
			case !text && string(k) == "delta":
				w.once(&seen, 2)
				n += w.delta()
			case !text && string(k) == "message":
				w.once(&seen, 4)
				n += w.delta()
			default:
				w.skip()
			}
		}
		if n > 0 {
			d.Pieces++
			d.Bytes += n
		}
	}
	return d
}

// delta is the bytes of output in the chat delta (or message) at w.i.
func (w *walker) delta() int64 {
	if !w.at('{') {
		w.skip()
		return 0
	}
	var n, reasoning, reasoningContent int64
	var seen uint8
	for {
		k, more := w.member()
		if !more {
			return n + max(reasoning, reasoningContent)
		}
		switch string(k) {
		case "content":
			w.once(&seen, 1)
			n += w.text()
		case "refusal":
			w.once(&seen, 2)
			n += w.text()
		case "reasoning":
			w.once(&seen, 4)
			reasoning += w.text()
		case "reasoning_content":
			w.once(&seen, 8)
			reasoningContent += w.text()
		case "tool_calls":
			w.once(&seen, 16)
			n += w.toolCalls()
		case "function_call":
			w.once(&seen, 32)
			n += w.function()
		default:
			w.skip()
		}
	}
}

// toolCalls is the bytes of the names and arguments of the tool_calls array at w.i.
func (w *walker) toolCalls() int64 {
	if !w.at('[') {
		w.skip()
		return 0
	}
	var n int64
	for w.element() {
		if !w.at('{') {
			w.skip()
			continue
		}
		var seen uint8
		for {
			k, more := w.member()
			if !more {
				break
			}
			if string(k) == "function" {
				w.once(&seen, 1)
				n += w.function()
			} else {
				w.skip()
			}
		}
	}
	return n
}

// function is the bytes of the name (tokens.NameBytes) and arguments of the function
// object at w.i.
func (w *walker) function() int64 {
	if !w.at('{') {
		w.skip()
		return 0
	}
	var n int64
	var seen uint8
	for {
		k, more := w.member()
		if !more {
			return n
		}
		switch string(k) {
		case "name":
			w.once(&seen, 1)
			// A function's name comes from the request's tools (at most 64 characters in
			// the OpenAI protocol): only a longer name counts (tokens.NameBytes).
			n += tokens.NameBytes(w.text())
		case "arguments":
			w.once(&seen, 2)
			n += w.args()
		default:
			w.skip()
		}
	}
}

// args is the bytes of the tool arguments (a JSON string holding JSON) at w.i that count
// (tokens.ArgBytes: the JSON's punctuation aside), and reads past it.
func (w *walker) args() int64 {
	if !w.at('"') {
		return w.text()
	}
	v, esc := w.str()
	var n int64
	for i := 0; i < len(v); {
		if !esc || v[i] != '\\' {
			if !tokens.IsJSONPunct(v[i]) {
				n++
			}
			i++
			continue
		}
		r, next := unescapeAt(v, i)
		if r >= 0x80 || r >= 0 && !tokens.IsJSONPunct(byte(r)) {
			n += int64(utf8.RuneLen(r))
		}
		i = next
	}
	return n
}
