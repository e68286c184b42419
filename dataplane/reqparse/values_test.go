package reqparse

import (
	"strings"
	"testing"
)

// TestParseStrictValues: text that is not valid Unicode and numbers that are not finite or
// out of their field's range are refused with 400 naming the param, on every endpoint; the
// allowed neighbours pass.
func TestParseStrictValues(t *testing.T) {
	const cm = `"model":"m","messages":[{"role":"user","content":"x"}],`
	const am = `"model":"m","max_tokens":10,"messages":[{"role":"user","content":"x"}],`
	const rm = `"model":"m","input":"x",`
	const sq = `"questions":{"q":{"type":"noul"}}`
	tests := []struct {
		name     string
		endpoint string
		body     string
		param    string // "" means accepted
	}{
		// invalid UTF-8 in string content and in key names
		{"chat content bad utf8", chat, `{"model":"m","messages":[{"role":"user","content":"a` + "\xff" + `b"}]}`, "messages[0].content"},
		{"chat part text bad utf8", chat, `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"ok"},{"type":"text","text":"` + "\xc3\x28" + `"}]}]}`, "messages[0].content[1].text"},
		{"chat truncated sequence", chat, `{"model":"m","messages":[{"role":"user","content":"` + "\xe2\x82" + `"}]}`, "messages[0].content"},
		{"chat overlong encoding", chat, `{"model":"m","messages":[{"role":"user","content":"` + "\xc0\xaf" + `"}]}`, "messages[0].content"},
		{"chat utf8 surrogate bytes", chat, `{"model":"m","messages":[{"role":"user","content":"` + "\xed\xa0\x80" + `"}]}`, "messages[0].content"},
		{"chat bad key name", chat, `{` + cm + `"x` + "\xff" + `":1}`, "x\uFFFD"},
		{"chat bad nested key name", chat, `{"model":"m","messages":[{"role":"user","content":"x","n` + "\xfe" + `":1}]}`, "messages[0].n\uFFFD"},
		{"chat bad utf8 in unknown field", chat, `{` + cm + `"metadata":{"a":["` + "\x80" + `"]}}`, "metadata.a[0]"},
		{"model bad utf8", emb, `{"model":"m` + "\xff" + `","input":"x"}`, "model"},
		{"completions prompt bad utf8", compl, `{"model":"m","prompt":"` + "\xff" + `"}`, "prompt"},
		{"embeddings input bad utf8", emb, `{"model":"m","input":["ok","` + "\xff" + `"]}`, "input[1]"},
		{"responses input bad utf8", resp, `{"model":"m","input":"` + "\xff" + `"}`, "input"},
		{"messages system bad utf8", msgs, `{` + am + `"system":"` + "\xff" + `"}`, "system"},
		{"count bad utf8", count, `{"model":"m","messages":[{"role":"user","content":"` + "\xff" + `"}]}`, "messages[0].content"},
		{"systemone state bad utf8", sys1, `{"model":"m","state":"` + "\xff" + `",` + sq + `}`, "state"},
		{"systemone question name bad utf8", sys1, `{"model":"m","state":"x","questions":{"q` + "\xff" + `":{"type":"noul"}}}`, "questions.q\uFFFD"},

		// lone surrogates in \u escapes
		{"lone high surrogate", chat, `{"model":"m","messages":[{"role":"user","content":"\ud800"}]}`, "messages[0].content"},
		{"high surrogate then text", chat, `{"model":"m","messages":[{"role":"user","content":"\ud83dx"}]}`, "messages[0].content"},
		{"high surrogate then non-low escape", chat, `{"model":"m","messages":[{"role":"user","content":"\ud83d\u0041"}]}`, "messages[0].content"},
		{"two high surrogates", chat, `{"model":"m","messages":[{"role":"user","content":"\ud83d\ud83d"}]}`, "messages[0].content"},
		{"high surrogate then newline escape", chat, `{"model":"m","messages":[{"role":"user","content":"\uD800\n"}]}`, "messages[0].content"},
		{"lone low surrogate", chat, `{"model":"m","messages":[{"role":"user","content":"\ude00"}]}`, "messages[0].content"},
		{"lone low surrogate upper case", compl, `{"model":"m","prompt":"a\uDFFF"}`, "prompt"},
		{"lone surrogate in key", chat, `{` + cm + `"\ud800":1}`, "\uFFFD"},
		{"lone surrogate after escaped backslash", chat, `{"model":"m","messages":[{"role":"user","content":"\\\ud800"}]}`, "messages[0].content"},
		{"lone surrogate in responses", resp, `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"\udc00"}]}]}`, "input[0].content[0].text"},
		{"lone surrogate in messages", msgs, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"\ud800"}]}`, "messages[0].content"},
		{"lone surrogate in systemone", sys1, `{"model":"m","state":"\ud800",` + sq + `}`, "state"},
		{"lone surrogate in embeddings", emb, `{"model":"m","input":"\ud800"}`, "input"},

		// numbers that are not finite
		{"temperature 1e999", chat, `{` + cm + `"temperature":1e999}`, "temperature"},
		{"temperature -1e999", compl, `{"model":"m","prompt":"x","temperature":-1e999}`, "temperature"},
		{"seed 1e999", chat, `{` + cm + `"seed":1e999}`, "seed"},
		{"seed 1E+400", compl, `{"model":"m","prompt":"x","seed":1E+400}`, "seed"},
		{"dimensions 1e999", emb, `{"model":"m","input":"x","dimensions":1e999}`, "dimensions"},
		{"max_tokens 1e999", msgs, `{"model":"m","max_tokens":1e999,"messages":[{"role":"user","content":"x"}]}`, "max_tokens"},
		{"max_output_tokens 1e999", resp, `{` + rm + `"max_output_tokens":1e999}`, "max_output_tokens"},
		{"400 digits", chat, `{` + cm + `"top_p":` + strings.Repeat("9", 400) + `}`, "top_p"},
		{"unknown field 1e999", chat, `{` + cm + `"frequency_penalty":1e999}`, "frequency_penalty"},
		{"nested unknown 1e999", chat, `{` + cm + `"tools":[{"type":"function","function":{"name":"f","parameters":{"maximum":1e999}}}]}`, "tools[0].function.parameters.maximum"},
		{"1e999 in array", sys1, `{"model":"m","state":"x","questions":{"q":{"type":"score","scale":[1,2e500]}}}`, "questions.q.scale[1]"},
		{"repetition_penalty 1e309", compl, `{"model":"m","prompt":"x","repetition_penalty":1e309}`, "repetition_penalty"},

		// integers out of range
		{"seed 2^64", chat, `{` + cm + `"seed":18446744073709551616}`, "seed"},
		{"seed 2^63", compl, `{"model":"m","prompt":"x","seed":9223372036854775808}`, "seed"},
		{"seed below int64", chat, `{` + cm + `"seed":-9223372036854775809}`, "seed"},
		{"seed 1e19", chat, `{` + cm + `"seed":1e19}`, "seed"},
		{"max_tokens 2^31", chat, `{` + cm + `"max_tokens":2147483648}`, "max_tokens"},
		{"max_tokens 2^64", chat, `{` + cm + `"max_tokens":18446744073709551616}`, "max_tokens"},
		{"max_completion_tokens huge", chat, `{` + cm + `"max_completion_tokens":1e12}`, "max_completion_tokens"},
		{"completions max_tokens huge", compl, `{"model":"m","prompt":"x","max_tokens":99999999999999999999}`, "max_tokens"},
		{"messages max_tokens 2^63", msgs, `{"model":"m","max_tokens":9223372036854775808,"messages":[{"role":"user","content":"x"}]}`, "max_tokens"},
		{"max_output_tokens 2^31", resp, `{` + rm + `"max_output_tokens":2147483648}`, "max_output_tokens"},
		{"dimensions 2^31", emb, `{"model":"m","input":"x","dimensions":2147483648}`, "dimensions"},
		{"dimensions 2^64", emb, `{"model":"m","input":"x","dimensions":18446744073709551616}`, "dimensions"},
		{"chat n 129", chat, `{` + cm + `"n":129}`, "n"},
		{"chat n 2^64", chat, `{` + cm + `"n":18446744073709551616}`, "n"},
		{"completions n 2^64+1", compl, `{"model":"m","prompt":"x","n":18446744073709551617}`, "n"},
		{"logprobs 2^64", compl, `{"model":"m","prompt":"x","logprobs":18446744073709551616}`, "logprobs"},

		// numbers out of their ranges
		{"temperature -0.1", chat, `{` + cm + `"temperature":-0.1}`, "temperature"},
		{"temperature 2.01", chat, `{` + cm + `"temperature":2.01}`, "temperature"},
		{"temperature 3 completions", compl, `{"model":"m","prompt":"x","temperature":3}`, "temperature"},
		{"temperature 2.5 responses", resp, `{` + rm + `"temperature":2.5}`, "temperature"},
		{"temperature 1.5 messages", msgs, `{` + am + `"temperature":1.5}`, "temperature"},
		{"top_p 1.1", chat, `{` + cm + `"top_p":1.1}`, "top_p"},
		{"top_p -1 messages", msgs, `{` + am + `"top_p":-1}`, "top_p"},
		{"top_p 1e300 responses", resp, `{` + rm + `"top_p":1e300}`, "top_p"},

		// allowed neighbours
		{"valid surrogate pair", chat, `{"model":"m","messages":[{"role":"user","content":"\ud83d\ude00 \uD83D\uDE00"}]}`, ""},
		{"escaped backslash then u", chat, `{"model":"m","messages":[{"role":"user","content":"\\ud800 is text"}]}`, ""},
		{"raw non-ascii text", chat, `{"model":"m","messages":[{"role":"user","content":"Hej på dig 😀 中文"}]}`, ""},
		{"non-ascii key", chat, `{` + cm + `"métadonnées":{"ключ":"值"}}`, ""},
		{"bmp escapes", compl, `{"model":"m","prompt":"\u00e5\u4e2d\uffff\u0000"}`, ""},
		{"surrogate pair in key", chat, `{` + cm + `"\ud83d\ude00":1}`, ""},
		{"seed max int64", chat, `{` + cm + `"seed":9223372036854775807}`, ""},
		{"seed min int64", compl, `{"model":"m","prompt":"x","seed":-9223372036854775808}`, ""},
		{"seed 1e18", chat, `{` + cm + `"seed":1e18}`, ""},
		{"seed 2.0", chat, `{` + cm + `"seed":2.0}`, ""},
		{"max_tokens 2^31-1", chat, `{` + cm + `"max_tokens":2147483647}`, ""},
		{"dimensions 2^31-1", emb, `{"model":"m","input":"x","dimensions":2147483647}`, ""},
		{"n 128", chat, `{` + cm + `"n":128}`, ""},
		{"temperature bounds", chat, `{` + cm + `"temperature":2,"top_p":0}`, ""},
		{"temperature 0.0 messages", msgs, `{` + am + `"temperature":1.0,"top_p":1e-3}`, ""},
		{"large finite unknown", chat, `{` + cm + `"x":1.7976931348623157e308,"y":-1e308,"z":1e-999,"w":` + strings.Repeat("9", 300) + `}`, ""},
		{"tiny number", compl, `{"model":"m","prompt":"x","temperature":1e-400}`, ""},
		{"e in words", chat, `{` + cm + `"stream":false,"store":false,"x":true,"e":"1e999"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.endpoint, []byte(tt.body))
			if tt.param == "" {
				if err != nil {
					t.Fatalf("refused: %v (param %q)", err, err.Param)
				}
				return
			}
			if err == nil {
				t.Fatal("Parse accepted the body")
			}
			if err.Status != 400 || err.Type != "invalid_request_error" || err.Message == "" {
				t.Fatalf("got %d %s %q, want a 400 invalid_request_error", err.Status, err.Type, err.Message)
			}
			if err.Param != tt.param {
				t.Fatalf("param %q, want %q (%v)", err.Param, tt.param, err)
			}
		})
	}
}

func TestPathAt(t *testing.T) {
	s := `{"a":{"b":[1,{"c":"x"}]},"d\u0065":[[],[true,"y"]]}`
	for sub, want := range map[string]string{`1,`: "a.b[0]", `"x"`: "a.b[1].c", `"c"`: "a.b[1].c",
		`"y"`: "de[1][1]", `[]`: "de[0]", `true`: "de[1][0]"} {
		if got := pathAt(s, strings.Index(s, sub)); got != want {
			t.Errorf("pathAt(%s) = %q, want %q", sub, got, want)
		}
	}
}

// BenchmarkScan measures the validating scan (scan.go) on 64 KiB bodies against the passes
// it replaced (reference_test.go: nesting and numbers, gjson.Valid, UTF-8 and escapes).
func BenchmarkScan(b *testing.B) {
	for _, body := range []struct {
		name string
		b    []byte
	}{{"chat", chatBody(64 << 10)}, {"prose", proseBody(64 << 10)}} {
		s := string(body.b)
		b.Run(body.name+"/scan", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				if r := scan(body.b, true, nil); !r.ok || r.valuesErr(s) != nil {
					b.Fatal("refused")
				}
			}
		})
		b.Run(body.name+"/reference", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				if refFront(s) != nil {
					b.Fatal("refused")
				}
			}
		})
	}
}
