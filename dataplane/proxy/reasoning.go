package proxy

import (
	"bytes"
	"unsafe"

	"github.com/tidwall/gjson"
)

// Chat clients look for a model's reasoning under either name: vLLM (and Ollama) write
// reasoning, SGLang, llama.cpp and vLLM before 0.17 reasoning_content, and the SDKs and
// applications read one or the other. A chat answer passed through carries both.

var reasoningKey = []byte(`"reasoning`)

// indexQuoted is bytes.Index(b, key) for a key starting with '"'. It searches for the rest
// of key and checks the quote before it: JSON has a quote every few bytes, and
// bytes.Index slows down on a first byte that is that common.
func indexQuoted(b, key []byte) int {
	for i := 0; ; {
		j := bytes.Index(b[i:], key[1:])
		if j < 0 {
			return -1
		}
		if i+j > 0 && b[i+j-1] == '"' {
			return i + j - 1
		}
		i += j + 1
	}
}

// maxMirrored bounds the choices of one chunk whose reasoning is mirrored.
const maxMirrored = 16

// MirrorReasoning returns a chat completion (member "message") or chunk (member "delta")
// whose choices carry their reasoning under both names, when one of them has it and the
// other is absent (a null one is left: a second member of its name would be a duplicate),
// appended to dst[:0]; ok is false when nothing changed (b is then
// returned as is). b must be valid JSON. The other name is inserted right after the given
// one, its value the same JSON string, so the rest of b is unchanged.
func MirrorReasoning(dst, b []byte, member string) (out []byte, ok bool) {
	if !reasoningString(b) {
		return b, false
	}
	type insert struct {
		at   int    // offset in b after the given member's value
		name string // the member to add
		raw  string // its value
	}
	var ins [maxMirrored]insert
	n := 0
	root := gjson.Parse(unsafe.String(unsafe.SliceData(b), len(b)))
	root.Get("choices").ForEach(func(_, c gjson.Result) bool {
		m := c.Get(member)
		r, rc := m.Get("reasoning"), m.Get("reasoning_content")
		switch {
		case r.Type == gjson.String && r.Str != "" && !rc.Exists() && r.Index > 0:
			ins[n] = insert{r.Index + len(r.Raw), "reasoning_content", r.Raw}
		case rc.Type == gjson.String && rc.Str != "" && !r.Exists() && rc.Index > 0:
			ins[n] = insert{rc.Index + len(rc.Raw), "reasoning", rc.Raw}
		default:
			return true
		}
		n++
		return n < maxMirrored
	})
	if n == 0 {
		return b, false
	}
	out, prev := dst[:0], 0
	for _, in := range ins[:n] {
		if in.at < prev || in.at > len(b) {
			return b, false // not in order: leave the chunk as it is
		}
		out = append(out, b[prev:in.at]...)
		out = append(out, ',', '"')
		out = append(out, in.name...)
		out = append(out, '"', ':')
		out = append(out, in.raw...)
		prev = in.at
	}
	return append(out, b[prev:]...), true
}

// reasoningString reports whether b may have a reasoning member whose value is a string (a
// key starting with "reasoning followed by a string value), so that chunks without one
// (SGLang's "reasoning_content": null in every chunk) are not parsed.
func reasoningString(b []byte) bool {
	for i := 0; ; {
		j := indexQuoted(b[i:], reasoningKey)
		if j < 0 {
			return false
		}
		i += j + len(reasoningKey)
		k := bytes.IndexByte(b[i:], '"') // the key's closing quote
		if k < 0 {
			return false
		}
		v := bytes.TrimLeft(b[i+k+1:], " \t\r\n")
		if len(v) > 0 && v[0] == ':' {
			if v = bytes.TrimLeft(v[1:], " \t\r\n"); len(v) > 0 && v[0] == '"' {
				return true
			}
		}
	}
}

var finishKey = []byte(`"finish_reason":"`)

// NormalizeFinish returns a chat completion or chunk whose finish_reason values named in
// stop (a server's own values for a natural end, dialect.Dialect.FinishStop) read "stop",
// appended to dst[:0]; ok is false when there were none (b is then returned as is).
func NormalizeFinish(dst, b []byte, stop []string) (out []byte, ok bool) {
	if len(stop) == 0 {
		return b, false
	}
	out, prev := dst[:0], 0
	for i := 0; ; {
		j := indexQuoted(b[i:], finishKey)
		if j < 0 {
			break
		}
		v := i + j + len(finishKey) // the value's first byte
		i = v
		for _, s := range stop {
			if len(b) > v+len(s) && string(b[v:v+len(s)]) == s && b[v+len(s)] == '"' {
				out = append(append(out, b[prev:v]...), "stop"...)
				prev, ok = v+len(s), true
				break
			}
		}
	}
	if !ok {
		return b, false
	}
	return append(out, b[prev:]...), true
}
