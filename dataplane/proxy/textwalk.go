package proxy

import (
	"unsafe"

	"github.com/sekgate/gateway/dataplane/tokens"
)

// value is tokens.TextBytes of the value at w.i, read without allocating, and reads past
// it: a string's decoded length; in an object, every member's but those tokens.NotText
// names, a tool's name as tokens.NameBytes, its arguments or input as tokens.ArgBytes,
// reasoning under either name once; in an array, every element's.
func (w *walker) value() int64 {
	w.ws()
	if w.i >= len(w.b) {
		return 0
	}
	switch w.b[w.i] {
	case '"':
		return w.text()
	case '[':
		var n int64
		for w.element() {
			n = tokens.Add(n, w.value())
		}
		return n
	case '{':
		return w.object()
	}
	w.skip()
	return 0
}

// object is value for the object at w.i.
func (w *walker) object() int64 {
	var n, reasoning, reasoningContent int64
	for {
		k, more := w.member()
		if !more {
			return tokens.Add(n, max(reasoning, reasoningContent))
		}
		switch key := unsafe.String(unsafe.SliceData(k), len(k)); {
		case tokens.NotText(key):
			w.skip()
		case key == "name" && w.at('"'):
			n = tokens.Add(n, tokens.NameBytes(w.text()))
		case key == "input" || key == "arguments" || key == "partial_json":
			n = tokens.Add(n, w.argValue())
		case key == "reasoning":
			reasoning = tokens.Add(reasoning, w.value())
		case key == "reasoning_content":
			reasoningContent = tokens.Add(reasoningContent, w.value())
		default:
			n = tokens.Add(n, w.value())
		}
	}
}

// argValue is tokens.ArgValueBytes of the value at w.i, and reads past it.
func (w *walker) argValue() int64 {
	w.ws()
	if w.i >= len(w.b) {
		return 0
	}
	switch w.b[w.i] {
	case '"':
		return w.args()
	case '{', '[':
		start := w.i
		w.skip()
		return tokens.ArgBytes(unsafe.String(unsafe.SliceData(w.b[start:w.i]), w.i-start))
	}
	w.skip()
	return 0
}

// integer reads the value at w.i as a JSON integer (0 when it is not one), and reads past it.
func (w *walker) integer() int64 {
	w.ws()
	start := w.i
	w.skip()
	var n int64
	for _, c := range w.b[start:w.i] {
		if c < '0' || c > '9' || n > 1<<40 {
			return 0
		}
		n = n*10 + int64(c-'0')
	}
	return n
}
