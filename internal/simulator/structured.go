package simulator

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/shared/jsonenc"
)

// Structured output. A request that constrains its answer to JSON, as vLLM's guided
// decoding does, gets a JSON value instead of words: chat's response_format
// {"type":"json_object"} or {"type":"json_schema","json_schema":{"schema":{...}}}, vLLM's
// guided_json (a schema, or a schema in a string), and the Responses protocol's text.format
// {"type":"json_schema","schema":{...}} or {"type":"json_object"}. The value is generated
// from the schema (GenerateJSON); json_object gets an object of one string member. Tool
// calls take precedence, as with a real server when the model calls a tool.

// structuredOf returns the JSON answer the request constrains itself to, and whether it
// does; seed picks the words of its strings.
func structuredOf(root gjson.Result, seed uint64) (string, bool) {
	schema, ok := structuredSchema(root)
	if !ok {
		return "", false
	}
	return GenerateJSON(schema, seed), true
}

// jsonObjectSchema is the schema of a json_object answer.
var jsonObjectSchema = gjson.Parse(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`)

func structuredSchema(root gjson.Result) (gjson.Result, bool) {
	if g := root.Get("guided_json"); g.Exists() && g.Type != gjson.Null {
		if g.Type == gjson.String {
			g = gjson.Parse(g.Str)
		}
		return g, true
	}
	format := root.Get("response_format")
	schema := format.Get("json_schema.schema")
	if !format.Exists() {
		format = root.Get("text.format") // Responses
		schema = format.Get("schema")
	}
	switch format.Get("type").Str {
	case "json_object":
		return jsonObjectSchema, true
	case "json_schema":
		if !schema.IsObject() {
			return jsonObjectSchema, true
		}
		return schema, true
	}
	return gjson.Result{}, false
}

// GenerateJSON returns a deterministic JSON value valid against schema (the JSON Schema
// subset structured output uses: type, properties, required, items, prefixItems, enum,
// const, anyOf/oneOf/allOf, $ref into $defs or definitions, minItems/maxItems,
// minLength/maxLength, minimum/maximum and their exclusive forms, and the date-time, date,
// time, email, uri and uuid formats). Every property is given, required or not. Members
// are separated by ", " and ": " so that each fragment after a space is one streamed
// token. seed picks the words of strings. Exported so tests elsewhere can predict answers.
func GenerateJSON(schema gjson.Result, seed uint64) string {
	g := &jsonGen{root: schema, seed: seed}
	return string(g.value(nil, schema, "", 0))
}

type jsonGen struct {
	root gjson.Result
	seed uint64
	n    int // strings generated so far (varies the words)
}

// maxDepth bounds nesting (recursive schemas through $ref end there with the smallest
// value of the type).
const maxDepth = 12

func (g *jsonGen) value(b []byte, s gjson.Result, name string, depth int) []byte {
	s = g.resolve(s, depth)
	if c := s.Get("const"); c.Exists() {
		return append(b, c.Raw...)
	}
	if e := s.Get("enum"); e.IsArray() && len(e.Array()) > 0 {
		return append(b, e.Array()[0].Raw...)
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts := s.Get(k); alts.IsArray() && len(alts.Array()) > 0 {
			return g.value(b, pickAlternative(alts.Array()), name, depth+1)
		}
	}
	if all := s.Get("allOf"); all.IsArray() && len(all.Array()) > 0 && !s.Get("type").Exists() {
		return g.value(b, all.Array()[0], name, depth+1)
	}
	switch typeOf(s) {
	case "object":
		return g.object(b, s, depth)
	case "array":
		return g.array(b, s, name, depth)
	case "string":
		return jsonenc.AppendString(b, g.str(s, name))
	case "integer":
		return strconv.AppendInt(b, int64(number(s, true)), 10)
	case "number":
		return strconv.AppendFloat(b, number(s, false), 'f', -1, 64)
	case "boolean":
		return append(b, "true"...)
	case "null":
		return append(b, "null"...)
	}
	return jsonenc.AppendString(b, g.str(s, name)) // no type: any value; a string
}

// resolve follows a local $ref ("#/$defs/X", "#/definitions/X", "#").
func (g *jsonGen) resolve(s gjson.Result, depth int) gjson.Result {
	for i := 0; i < maxDepth; i++ {
		ref := s.Get(`\$ref`)
		if ref.Type != gjson.String {
			return s
		}
		path, ok := strings.CutPrefix(ref.Str, "#")
		if !ok {
			return gjson.Result{}
		}
		path = strings.TrimPrefix(path, "/")
		if path == "" {
			s = g.root
			continue
		}
		parts := strings.Split(path, "/")
		for j, p := range parts {
			p = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
			parts[j] = gjsonEscape(p)
		}
		s = g.root.Get(strings.Join(parts, "."))
	}
	return s
}

// gjsonEscape escapes a key for a gjson path.
func gjsonEscape(k string) string {
	r := strings.NewReplacer(".", `\.`, "*", `\*`, "?", `\?`, "$", `\$`, "|", `\|`, "#", `\#`, "@", `\@`)
	return r.Replace(k)
}

// pickAlternative prefers an alternative that is not null (a nullable field gets a value).
func pickAlternative(alts []gjson.Result) gjson.Result {
	for _, a := range alts {
		if typeOf(a) != "null" {
			return a
		}
	}
	return alts[0]
}

// typeOf is the schema's type: the first non-null of a list, "object" for a schema with
// properties, "array" with items.
func typeOf(s gjson.Result) string {
	t := s.Get("type")
	if t.IsArray() {
		for _, x := range t.Array() {
			if x.Str != "null" {
				return x.Str
			}
		}
		return "null"
	}
	switch {
	case t.Type == gjson.String:
		return t.Str
	case s.Get("properties").Exists():
		return "object"
	case s.Get("items").Exists() || s.Get("prefixItems").Exists():
		return "array"
	}
	return ""
}
