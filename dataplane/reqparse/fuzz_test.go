package reqparse

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

var fuzzSeeds = map[string][]string{
	chat: {
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":5}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a\u00e5"}]},{"role":"tool","tool_call_id":"x","content":"1"}],"stop":["x"]}`,
		`{"model":"m","messages":[],"store":true}`,
		`{"model":"m","model":"n"}`,
		`[[[[[[`,
	},
	compl: {`{"model":"m","prompt":"x","n":1,"best_of":1,"logprobs":3,"max_tokens":1.0}`, `{"model":"m","prompt":[1,2]}`},
	emb:   {`{"model":"e","input":["a","b"],"encoding_format":"base64","dimensions":3}`, `{"model":"e","input":[[1]]}`},
	resp: {
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:x"}]},{"type":"function_call_output","call_id":"c","output":"o"}],"tools":[{"type":"function","name":"f"}]}`,
		`{"model":"m","input":"x","store":true,"previous_response_id":"r"}`,
	},
	msgs: {
		`{"model":"m","max_tokens":3,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{"type":"url"}}]}]}],"tools":[{"name":"f","input_schema":{}}]}`,
	},
	count: {`{"model":"m","messages":[{"role":"user","content":"x"}],"stream":false}`},
	sys1:  {`{"model":"s","state":"x","questions":{"a":{"type":"choice","choices":["y","n"]},"b":{"type":"score"}}}`, `{"model":"s","state":"x","questions":{"\u0071":{}}}`},
}

func fuzzParse(f *testing.F, endpoint string) {
	for _, s := range fuzzSeeds[endpoint] {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"model":"m"}`))
	f.Add([]byte(`{"model":"m\"","x":"\ud800"}`))
	f.Add([]byte(`{"model":"m","x":"\ud83d\ude00","y":1e308,"seed":9223372036854775807}`))
	f.Add([]byte(`{"model":"m","temperature":1e999,"seed":18446744073709551616}`))
	f.Add([]byte("{\"model\":\"m\",\"k\xff\":\"\xc3\x28\"}"))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := Parse(endpoint, body)
		if err != nil {
			if err.Status != 400 && err.Status != 413 {
				t.Fatalf("status %d", err.Status)
			}
			if strings.TrimSpace(err.Message) == "" {
				t.Fatal("empty error message")
			}
			for _, style := range []bool{false, true} {
				if out := err.JSON(style); !json.Valid(out) {
					t.Fatalf("error envelope is not JSON: %s", out)
				}
			}
			return
		}
		if !json.Valid(body) || !utf8.Valid(body) {
			t.Fatalf("accepted invalid JSON or invalid UTF-8 %q", body)
		}
		// encoding/json refuses numbers outside the float64 range: none may pass.
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", body, err)
		}
		if off, why := refTextCheck(string(body)); off >= 0 {
			t.Fatalf("accepted %q with text that is not valid Unicode at %d: %s", body, off, why)
		}
		if r.Model == "" || r.Endpoint != endpoint || r.MaxTokens < 0 || r.PromptBytes < 0 || r.InputCount < 0 {
			t.Fatalf("accepted with an impossible summary %+v", r)
		}
		if r.PromptBytes > int64(len(body)) {
			t.Fatalf("prompt size %d exceeds body size %d", r.PromptBytes, len(body))
		}
	})
}

func FuzzParseChat(f *testing.F)        { fuzzParse(f, chat) }
func FuzzParseCompletions(f *testing.F) { fuzzParse(f, compl) }
func FuzzParseEmbeddings(f *testing.F)  { fuzzParse(f, emb) }
func FuzzParseResponses(f *testing.F)   { fuzzParse(f, resp) }
func FuzzParseMessages(f *testing.F)    { fuzzParse(f, msgs) }
func FuzzParseCountTokens(f *testing.F) { fuzzParse(f, count) }
func FuzzParseSystemOne(f *testing.F)   { fuzzParse(f, sys1) }

// FuzzWalk checks the raw walker against gjson-validated input: it must never panic and must
// see every member of an object.
func FuzzWalk(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":[1,{"c":"\"}"}],"d":"x\\"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if !ValidJSON(b) {
			return
		}
		s := string(b)
		// The error-path helpers terminate on any offset of valid JSON.
		for _, off := range []int{0, len(s) / 3, len(s) / 2, len(s) - 1} {
			_ = pathAt(s, off)
		}
		_, _ = refTextCheck(s)
		if _, inf := refStructure(s); inf >= 0 || !utf8.Valid(b) {
			return // numbers outside float64 or invalid UTF-8, which Parse refuses (values.go)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("ValidJSON accepted what encoding/json refuses: %v", err)
		}
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		n := 0
		eachMember(s[skipWS(s, 0):], func(key, val string) bool {
			n++
			if _, ok := m[key]; !ok {
				t.Fatalf("walker saw key %q that encoding/json did not", key)
			}
			if !json.Valid([]byte(val)) {
				t.Fatalf("walker returned invalid value %q", val)
			}
			return true
		})
		if n < len(m) {
			t.Fatalf("walker saw %d members, encoding/json %d", n, len(m))
		}
	})
}
