package proxy

import (
	"bytes"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// lengthFields are the request members by which a model server limits an answer's length.
// The interface's own (max_tokens, max_completion_tokens, max_output_tokens) and the
// servers' own, which they read beside or instead of them:
//   - llama.cpp: n_predict, read before max_tokens (tools/server/server-common.cpp,
//     params_from_json_cmpl; max_completion_tokens is never read);
//   - TGI: max_new_tokens (router/src/lib.rs, GenerateParameters; its OpenAI layer maps
//     max_tokens onto it, and the native field passes through);
//   - Ollama: num_predict, top level or in options (api/types.go, Options; openai/openai.go
//     maps max_tokens onto it).
var lengthFields = []string{"max_tokens", "max_completion_tokens", "max_output_tokens",
	"n_predict", "max_new_tokens", "num_predict", "options.num_predict", "parameters.max_new_tokens"}

// lengthHints are substrings one of which a body holds when it has any length field but the
// interface's single one: a body without them needs no edit (most bodies; one scan each).
var lengthHints = [][]byte{[]byte(`"n_predict"`), []byte(`"max_new_tokens"`), []byte(`"num_predict"`), []byte(`"max_completion_tokens"`)}

// BoundLengths makes every length field a body has say at most bound tokens (the request's
// output bound per choice, tokens.Bounds): a field over it, not a whole number, or unlimited
// (llama.cpp's -1) is set to bound, so that whichever field the route's server reads, it
// generates no more than the gateway bounds and charges. Fields the body does not have are
// not added. It returns body itself when nothing changes.
func BoundLengths(body []byte, bound int64) ([]byte, error) {
	if bound <= 0 {
		return body, nil
	}
	hinted := false
	for _, h := range lengthHints {
		if bytes.Contains(body, h) {
			hinted = true
			break
		}
	}
	if !hinted {
		return body, nil
	}
	var err error
	for _, f := range lengthFields {
		v := gjson.GetBytes(body, f)
		if !v.Exists() || v.Type == gjson.Null {
			continue
		}
		if v.Type == gjson.Number && v.Num >= 0 && v.Num <= float64(bound) && v.Num == float64(int64(v.Num)) {
			continue
		}
		if body, err = sjson.SetBytes(body, f, bound); err != nil {
			return nil, err
		}
	}
	return body, nil
}
