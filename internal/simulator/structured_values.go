package simulator

import (
	"math"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/shared/jsonenc"
)

// object appends every property of s, in the schema's order, then each required member
// the properties do not describe.
func (g *jsonGen) object(b []byte, s gjson.Result, depth int) []byte {
	if depth >= maxDepth {
		return append(b, "{}"...)
	}
	b = append(b, '{')
	seen := map[string]bool{}
	member := func(k string, p gjson.Result) {
		if len(seen) > 0 {
			b = append(b, ", "...)
		}
		seen[k] = true
		b = jsonenc.AppendString(b, k)
		b = append(b, ": "...)
		b = g.value(b, p, k, depth+1)
	}
	s.Get("properties").ForEach(func(k, p gjson.Result) bool {
		member(k.String(), p)
		return true
	})
	s.Get("required").ForEach(func(_, k gjson.Result) bool {
		if k.Type == gjson.String && !seen[k.Str] {
			member(k.Str, s.Get("additionalProperties"))
		}
		return true
	})
	return append(b, '}')
}

// array appends minItems items, at least one unless nested deeper than arrayDepth (so a
// recursive schema ends), within maxItems.
func (g *jsonGen) array(b []byte, s gjson.Result, name string, depth int) []byte {
	prefix := s.Get("prefixItems").Array()
	n := 0
	if depth < arrayDepth {
		n = 1
	}
	if m := s.Get("minItems"); m.Exists() {
		n = int(m.Int())
	}
	n = max(n, len(prefix))
	if m := s.Get("maxItems"); m.Exists() && int(m.Int()) < n {
		n = int(m.Int())
	}
	if depth >= maxDepth {
		n = min(n, len(prefix))
	}
	items := s.Get("items")
	unique := s.Get("uniqueItems").Bool()
	b = append(b, '[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ", "...)
		}
		it := items
		if i < len(prefix) {
			it = prefix[i]
		}
		if e := g.resolve(it, depth).Get("enum"); unique && e.IsArray() && i < len(e.Array()) {
			b = append(b, e.Array()[i].Raw...) // distinct items
			continue
		}
		b = g.value(b, it, name, depth+1)
	}
	return append(b, ']')
}

// arrayDepth is the nesting below which arrays get an item they do not require.
const arrayDepth = 4

// formats are the values of the string formats structured output knows.
var formats = map[string]string{
	"date-time": "2024-07-19T12:00:00Z", "date": "2024-07-19", "time": "12:00:00Z",
	"email": "fika@example.com", "uri": "https://example.com/", "url": "https://example.com/",
	"uuid": "123e4567-e89b-42d3-a456-426614174000", "hostname": "example.com",
	"ipv4": "192.0.2.1", "ipv6": "2001:db8::1", "duration": "P1D",
}

// str is a string for s: its format's value, or two generated words ("Stockholm" for a
// place), within minLength and maxLength.
func (g *jsonGen) str(s gjson.Result, name string) string {
	v, ok := formats[s.Get("format").Str]
	if !ok {
		if containsFold(name, "location") || containsFold(name, "city") || containsFold(name, "place") {
			v = "Stockholm"
		} else {
			v = word(g.seed, g.n) + " " + word(g.seed, g.n+1)
			g.n += 2
		}
	}
	if m := s.Get("minLength"); m.Exists() && len([]rune(v)) < int(m.Int()) {
		v += strings.Repeat("a", int(m.Int())-len([]rune(v)))
	}
	if m := s.Get("maxLength"); m.Exists() && len([]rune(v)) > int(m.Int()) {
		v = string([]rune(v)[:m.Int()])
	}
	return v
}

// number is a number within s's bounds: 1 when they allow it, else the nearest allowed.
func number(s gjson.Result, integer bool) float64 {
	lo, hi := math.Inf(-1), math.Inf(1)
	step := 1e-3
	if integer {
		step = 1
	}
	if v := s.Get("minimum"); v.Exists() {
		lo = v.Float()
	}
	if v := s.Get("exclusiveMinimum"); v.Type == gjson.Number {
		lo = math.Max(lo, v.Float()+step)
	}
	if v := s.Get("maximum"); v.Exists() {
		hi = v.Float()
	}
	if v := s.Get("exclusiveMaximum"); v.Type == gjson.Number {
		hi = math.Min(hi, v.Float()-step)
	}
	x := 1.0
	if x < lo {
		x = lo
	}
	if x > hi {
		x = hi
	}
	if integer {
		x = math.Ceil(x)
		if x > hi {
			x = math.Floor(hi)
		}
	}
	if m := s.Get("multipleOf"); m.Type == gjson.Number && m.Float() > 0 {
		x = math.Ceil(x/m.Float()) * m.Float()
	}
	return x
}
