package catalog

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestParseErrorsArePlaced(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"unknown model field", "models:\n  - id: m\n    input_ore_per_milion_tokens: 3\n",
			`line 3, column 5: models[0]: unknown field "input_ore_per_milion_tokens" in model; did you mean "input_ore_per_million_tokens"?`},
		{"unknown route field", "models:\n  - id: m\n    routes:\n      - id: r\n        priorty: 1\n",
			`line 5, column 9: models[0].routes[0]: unknown field "priorty" in route; did you mean "priority"?`},
		{"unknown top-level field", "model:\n  - id: m\n", `line 1, column 1: unknown field "model" in catalogue; did you mean "models"?`},
		{"nothing close", "models:\n  - id: m\n    colour: blue\n", `line 3, column 5: models[0]: unknown field "colour" in model`},
		{"case differs", "models:\n  - ID: m\n", `line 2, column 5: models[0]: unknown field "ID" in model; did you mean "id"?`},
		{"integer expected", "models:\n  - id: m\n    context_tokens: 8k\n", `line 3, column 21: models[0].context_tokens: must be an integer, got "8k"`},
		{"integer out of range", "models:\n  - id: m\n    routes: [{id: r, weight: 99999999999999999999}]\n",
			`line 3, column 30: models[0].routes[0].weight: must be an integer, got 99999999999999999999`},
		{"string expected", "models:\n  - id: 12\n", `line 2, column 9: models[0].id: must be a string, got 12`},
		{"boolean expected", "models:\n  - id: m\n    routes: [{id: r, translate: maybe}]\n", `line 3, column 33: models[0].routes[0].translate: must be true or false, got "maybe"`},
		{"list expected", "models:\n  id: m\n", `line 2, column 3: models: must be a list, got an object`},
		{"object expected", "- a\n", `line 1, column 1: the catalogue must be an object of fields, got a list`},
		{"field twice", "models:\n  - id: m\n    id: n\n", `line 3, column 5: models[0]: field "id" given twice in model`},
		{"empty", "\n", `the catalogue is empty`},
		{"YAML syntax", "models:\n  - id: m\n    endpoint: x: y\n", `line 3: malformed catalogue YAML: mapping values are not allowed in this context`},
		{"JSON unknown field", "{\"models\": [{\"id\": \"m\",\n  \"contxt_tokens\": 1}]}",
			`line 2, column 3: models[0]: unknown field "contxt_tokens" in model; did you mean "context_tokens"?`},
		{"JSON wrong type", "{\"models\": [{\"id\": \"m\",\n  \"context_tokens\": \"8k\"}]}",
			`line 2, column 21: models[0].context_tokens: must be an integer, got "8k"`},
		{"JSON syntax", "{\"models\": [{\"id\": \"m\",\n  \"context_tokens\" 1}]}",
			`line 2, column 20: malformed catalogue JSON: invalid character '1' after object key`},
		{"JSON cut short", "{\"models\": [", `line 1, column 13: malformed catalogue JSON: the JSON ends early`},
		{"JSON trailing data", "{\"models\": []}\n {}", `line 2, column 2: malformed catalogue JSON: data after the catalogue`},
		{"validation placed at the value", "models:\n  - id: m\n    endpoint: /v1/chat/completions\n    routes:\n      - id: r\n" +
			"        provider: p\n        base_url: /v1\n        region: x\n        country: SE\n        weight: 1\n",
			`line 7, column 19: models[0].routes[0].base_url: base_url "/v1": scheme must be http or https`},
		{"validation of a missing field placed at its object", "models:\n  - id: m\n    endpoint: /v1/chat/completions\n    routes:\n      - id: r\n        base_url: http://a/v1\n",
			`line 5, column 9: models[0].routes[0].provider: provider is required`},
		{"JSON validation", "{\"models\": [\n {\"id\": \"m\", \"endpoint\": \"/v1/images\"}]}",
			`line 2, column 26: models[0].endpoint: unknown endpoint "/v1/images"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Load([]byte(tt.src))
			var ce *Error
			if !errors.As(err, &ce) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v (%T), want a *Error", err, err)
			}
			if err.Error() != tt.want {
				t.Fatalf("error\n %s\nwant\n %s", err, tt.want)
			}
		})
	}
}

// Merge keys share route settings; their fields are checked like the route's own, and the
// route's own override them.
func TestParseMergeKeys(t *testing.T) {
	withAnchor := "models:\n  - id: m\n    endpoint: /v1/chat/completions\n    routes:\n" +
		"      - &r1\n        id: r1\n        provider: vllm\n        base_url: http://127.0.0.1:8090/v1\n        region: se-sto\n        country: SE\n        weight: 1\n" +
		"      - <<: *r1\n        id: r2\n        weight: 3\n"
	c, _, err := Load([]byte(withAnchor))
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Models[0].Routes[1]; r.ID != "r2" || r.Weight != 3 || r.Provider != "vllm" || r.Country != "SE" {
		t.Fatalf("merged route %+v", r)
	}
	typo := strings.Replace(withAnchor, "        region: se-sto\n", "        regoin: se-sto\n", 1)
	if _, _, err := Load([]byte(typo)); err == nil || err.Error() != `line 9, column 9: models[0].routes[0]: unknown field "regoin" in route; did you mean "region"?` {
		t.Fatalf("typo in a merged mapping: %v", err)
	}
}

// A document of nested aliases that would expand without bound is refused quickly.
func TestParseAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	b.WriteString("models: *a9\n")
	_, _, err := Load([]byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "excessive aliasing") {
		t.Fatalf("alias bomb: %v", err)
	}
}

// Text JSON allows and YAML does not (a raw DEL character) still loads, without
// positions; a byte order mark is skipped.
func TestParseOddText(t *testing.T) {
	for name, src := range map[string]string{
		"DEL in a JSON string":        `{"models":[{"id":"m","endpoint":"/v1/chat/completions","tokenizer":"a` + "\x7f" + `b"}]}`,
		"JSON with a byte order mark": "\ufeff" + validJSON,
		"YAML with a byte order mark": "\ufeff" + validYAML,
	} {
		if _, _, err := Load([]byte(src)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestErrorWhere(t *testing.T) {
	for _, tt := range []struct {
		e    Error
		want string
	}{
		{Error{Param: "models[0]", Message: "m", Line: 14, Column: 5, File: "catalog.yaml"}, "catalog.yaml:14:5: models[0]: m"},
		{Error{Message: "m", Line: 3, File: "c.yaml"}, "c.yaml:3: m"},
		{Error{Message: "m", File: "c.yaml"}, "c.yaml: m"},
		{Error{Param: "p", Message: "m", Line: 3}, "line 3: p: m"},
		{Error{Param: "p", Message: "m"}, "p: m"},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.e, got, tt.want)
		}
	}
}

func TestSniff(t *testing.T) {
	for src, want := range map[string]Format{"{}": FormatJSON, "\n  [1]": FormatJSON, "models: []": FormatYAML, "": FormatYAML, "# {\n": FormatYAML} {
		if got := Sniff([]byte(src)); got != want {
			t.Errorf("%q: %s, want %s", src, got, want)
		}
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"base_url", "id", "priority", "weight"}
	for name, want := range map[string]string{"priorty": "priority", "baseurl": "base_url", "Weight": "weight", "zz": "", "colour": "", "i": ""} {
		if got := suggest(name, known); got != want {
			t.Errorf("suggest(%q) = %q, want %q", name, got, want)
		}
	}
}

// Export writes what ParseAs reads back to the same catalogue, in both formats, even
// with values YAML would otherwise read as numbers or booleans.
func TestExportRoundTrip(t *testing.T) {
	c, err := ParseYAML([]byte(validYAML))
	if err != nil {
		t.Fatal(err)
	}
	c.Models[0].Aliases = append(c.Models[0].Aliases, "true", "1e3", "null", "-x")
	c.Models[0].Routes[0].Region = "0123"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []Format{FormatYAML, FormatJSON} {
		b, err := c.Export(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := Sniff(b); got != f {
			t.Errorf("export as %s sniffs as %s", f, got)
		}
		back, _, err := Load(b)
		if err != nil {
			t.Fatalf("%s export does not load: %v\n%s", f, err, b)
		}
		if !reflect.DeepEqual(back, c) {
			t.Errorf("%s round trip\n got %+v\nwant %+v", f, back, c)
		}
	}
	y, _ := c.Export(FormatYAML)
	if !strings.HasPrefix(string(y), "# Model catalogue") || strings.Contains(string(y), "{") {
		t.Errorf("YAML export not in block style:\n%s", y)
	}
}
