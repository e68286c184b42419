package simulator

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sekgate/gateway/internal/respcheck"
)

// structuredSchemas are schemas as structured-output clients send them (the Vercel AI
// SDK's and LangChain's from zod, hand-written ones).
var structuredSchemas = []struct{ name, schema string }{
	{"flat", `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"score":{"type":"number"},"ok":{"type":"boolean"}},"required":["name","age","score","ok"],"additionalProperties":false}`},
	{"nested", `{"type":"object","properties":{"recipe":{"type":"object","properties":{"name":{"type":"string","minLength":3},"steps":{"type":"array","items":{"type":"string"},"minItems":2},
		"ingredients":{"type":"array","items":{"type":"object","properties":{"item":{"type":"string"},"grams":{"type":"integer","minimum":5,"maximum":500}},"required":["item","grams"],"additionalProperties":false}}},
		"required":["name","steps","ingredients"],"additionalProperties":false}},"required":["recipe"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`},
	{"enums and bounds", `{"type":"object","properties":{"mood":{"type":"string","enum":["glad","ledsen"]},"level":{"type":"integer","exclusiveMinimum":10,"multipleOf":4},
		"ratio":{"type":"number","minimum":-2,"maximum":0.5},"tags":{"type":"array","items":{"enum":["a","b","c"]},"minItems":2,"maxItems":2,"uniqueItems":true},
		"short":{"type":"string","maxLength":3},"when":{"type":"string","format":"date-time"},"id":{"type":"string","format":"uuid"},"fixed":{"const":"x"}},
		"required":["mood","level","ratio","tags","short","when","id","fixed"]}`},
	{"nullable and refs", `{"type":"object","$defs":{"city":{"type":"object","properties":{"city":{"type":"string"},"pop":{"type":["integer","null"]}},"required":["city","pop"]}},
		"properties":{"home":{"$ref":"#/$defs/city"},"trips":{"type":"array","items":{"$ref":"#/$defs/city"}},"note":{"anyOf":[{"type":"null"},{"type":"string"}]}},"required":["home","trips","note"]}`},
	{"recursive", `{"type":"object","properties":{"label":{"type":"string"},"children":{"type":"array","items":{"$ref":"#"}}},"required":["label","children"]}`},
	{"top-level array", `{"type":"array","items":{"type":"integer"},"minItems":3}`},
}

// compileSchema compiles a schema for validating answers, with formats asserted.
func compileSchema(t *testing.T, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// validAgainst fails unless answer is JSON valid against sch.
func validAgainst(t *testing.T, sch *jsonschema.Schema, answer string) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(answer))
	if err != nil {
		t.Fatalf("answer is not JSON: %v: %s", err, answer)
	}
	if err := sch.Validate(v); err != nil {
		t.Fatalf("answer %s does not match the schema: %v", answer, err)
	}
}

// chatContent returns the answer's content, whole or joined from its stream, and its
// finish_reason.
func chatContent(t *testing.T, s *Server, body string, stream bool) (string, string) {
	t.Helper()
	st, _, b := post(t, s, "/v1/chat/completions", body)
	if st != 200 {
		t.Fatalf("status %d: %s", st, b)
	}
	if !stream {
		m := decode(t, string(b))
		c, _ := dig(m, "choices", 0, "message", "content").(string)
		f, _ := dig(m, "choices", 0, "finish_reason").(string)
		return c, f
	}
	var text, finish string
	for _, e := range parseSSE(t, b) {
		if e.data == "[DONE]" {
			continue
		}
		m := decode(t, e.data)
		c, _ := dig(m, "choices", 0, "delta", "content").(string)
		text += c
		if f, ok := dig(m, "choices", 0, "finish_reason").(string); ok {
			finish = f
		}
	}
	return text, finish
}

func TestChatStructuredOutput(t *testing.T) {
	s := startSim(t, Knobs{OutputTokens: 8})
	msgs := `"model":"m","messages":[{"role":"user","content":"a recipe please"}]`
	for _, tt := range structuredSchemas {
		sch := compileSchema(t, tt.schema)
		forms := map[string]string{
			"json_schema":        `{` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"out","strict":true,"schema":` + tt.schema + `}}`,
			"guided_json":        `{` + msgs + `,"guided_json":` + tt.schema,
			"guided_json string": `{` + msgs + `,"guided_json":` + string(mustMarshal(t, tt.schema)),
		}
		for form, body := range forms {
			for _, stream := range []bool{false, true} {
				name := tt.name + "/" + form
				if stream {
					name += "/stream"
				}
				t.Run(name, func(t *testing.T) {
					b := body + `,"stream":` + map[bool]string{false: "false", true: "true"}[stream] + `}`
					answer, finish := chatContent(t, s, b, stream)
					if finish != "stop" {
						t.Errorf("finish_reason %q", finish)
					}
					validAgainst(t, sch, answer)
				})
			}
		}
	}
}

func TestChatStructuredOutputForms(t *testing.T) {
	s := startSim(t, Knobs{OutputTokens: 8})
	msgs := `"model":"m","messages":[{"role":"user","content":"hej"}]`
	object := compileSchema(t, `{"type":"object","minProperties":1}`)
	for _, stream := range []string{"false", "true"} {
		answer, _ := chatContent(t, s, `{`+msgs+`,"response_format":{"type":"json_object"},"stream":`+stream+`}`, stream == "true")
		validAgainst(t, object, answer)
	}
	// A plain request still gets words.
	if answer, _ := chatContent(t, s, `{`+msgs+`}`, false); json.Valid([]byte(answer)) || answer != GenerateText("hej", 8) {
		t.Errorf("plain answer %q", answer)
	}
	// max_tokens cuts a JSON answer short, as guided decoding does.
	schema := structuredSchemas[1].schema
	body := `{` + msgs + `,"max_tokens":3,"response_format":{"type":"json_schema","json_schema":{"name":"r","schema":` + schema + `}}}`
	answer, finish := chatContent(t, s, body, false)
	if finish != "length" || json.Valid([]byte(answer)) || !strings.HasPrefix(answer, `{"recipe": `) {
		t.Errorf("cut answer %q finish %q", answer, finish)
	}
	// A tool call takes precedence over the format.
	body = `{` + msgs + `,"tool_choice":"required","tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"response_format":{"type":"json_object"}}`
	st, _, b := post(t, s, "/v1/chat/completions", body)
	if st != 200 || dig(decode(t, string(b)), "choices", 0, "finish_reason") != "tool_calls" {
		t.Errorf("tool call with a format: %d %s", st, b)
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestResponsesStructuredOutput(t *testing.T) {
	s := startSim(t, Knobs{OutputTokens: 8})
	for _, tt := range structuredSchemas {
		sch := compileSchema(t, tt.schema)
		body := `{"model":"m","input":"a recipe please","text":{"format":{"type":"json_schema","name":"out","strict":true,"schema":` + tt.schema + `}}`
		t.Run(tt.name, func(t *testing.T) {
			st, _, b := post(t, s, "/v1/responses", body+`}`)
			if st != 200 {
				t.Fatalf("status %d: %s", st, b)
			}
			m := decode(t, string(b))
			text, _ := dig(m, "output", 0, "content", 0, "text").(string)
			validAgainst(t, sch, text)

			st, _, b = post(t, s, "/v1/responses", body+`,"stream":true}`)
			if st != 200 {
				t.Fatalf("stream status %d: %s", st, b)
			}
			var order respcheck.Stream
			for _, e := range parseSSE(t, b) {
				if err := order.Add(e.name, []byte(e.data)); err != nil {
					t.Fatalf("the SDK stream helper would throw: %v", err)
				}
			}
			items := order.Items()
			if kind, _ := order.Terminal(); kind != "response.completed" || len(items) != 1 || items[0].Text() != text {
				t.Fatalf("terminal %s items %+v, want the whole answer %s", kind, items, text)
			}
		})
	}
	// json_object, and a cut.
	object := compileSchema(t, `{"type":"object","minProperties":1}`)
	_, _, b := post(t, s, "/v1/responses", `{"model":"m","input":"hej","text":{"format":{"type":"json_object"}}}`)
	text, _ := dig(decode(t, string(b)), "output", 0, "content", 0, "text").(string)
	validAgainst(t, object, text)
	_, _, b = post(t, s, "/v1/responses", `{"model":"m","input":"hej","max_output_tokens":1,"text":{"format":{"type":"json_object"}}}`)
	if m := decode(t, string(b)); m["status"] != "incomplete" || json.Valid([]byte(dig(m, "output", 0, "content", 0, "text").(string))) {
		t.Errorf("cut JSON answer: %s", b)
	}
}
