package proxy

import (
	"bytes"
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Chat clients look for a model's reasoning under either name: vLLM (and Ollama) write
// reasoning, SGLang, llama.cpp and vLLM before 0.17 reasoning_content, and the SDKs and
// applications read one or the other. A chat answer passed through carries both.

var reasoningKey = []byte(`"reasoning`)

// MirrorReasoning returns a chat completion (member "message") or chunk (member "delta")
// whose choices carry their reasoning under both names, when one of them has it and the
// other is absent or null; ok is false when nothing changed (b is then returned as is).
func MirrorReasoning(b []byte, member string) (out []byte, ok bool) {
	if !bytes.Contains(b, reasoningKey) {
		return b, false
	}
	out = b
	gjson.GetBytes(b, "choices").ForEach(func(k, c gjson.Result) bool {
		m := c.Get(member)
		r, rc := m.Get("reasoning"), m.Get("reasoning_content")
		var set, v string
		switch {
		case r.Type == gjson.String && r.Str != "" && (!rc.Exists() || rc.Type == gjson.Null):
			set, v = "reasoning_content", r.Str
		case rc.Type == gjson.String && rc.Str != "" && (!r.Exists() || r.Type == gjson.Null):
			set, v = "reasoning", rc.Str
		default:
			return true
		}
		if o, err := sjson.SetBytes(out, "choices."+strconv.Itoa(int(k.Int()))+"."+member+"."+set, v); err == nil {
			out, ok = o, true
		}
		return true
	})
	return out, ok
}
