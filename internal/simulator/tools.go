package simulator

import (
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/shared/jsonenc"
)

// Tool calls. A request that offers tools gets a tool call instead of text when its last
// message is the user's (not a tool result) and one of these holds: the user text contains
// the word "weather" (any case); tool_choice forces a tool ("required", "any", or a named
// tool/function); the header X-Sim-Tool-Call is true; or the body's sim.tool_call is true.
// tool_choice "none" never calls a tool. The called tool is the one tool_choice names, else
// the first whose name contains "weather", else the first tool. Its arguments are built from
// the tool's JSON schema "properties" (see buildArgs).

// tool is a tool offered by the request.
type tool struct {
	name   string
	schema gjson.Result
}

// Tool list shapes per protocol.
const (
	toolsChat      = iota // {"type":"function","function":{"name","parameters"}}
	toolsResponses        // {"type":"function","name","parameters"}
	toolsMessages         // {"name","input_schema"}
)

// pickTool decides whether to answer with a tool call, and which.
func (c *call) pickTool(shape int, lastIsUser bool, lastText string) (tool, bool) {
	tools := c.root.Get("tools")
	if !tools.IsArray() || !lastIsUser {
		return tool{}, false
	}
	var list []tool
	tools.ForEach(func(_, t gjson.Result) bool {
		var tl tool
		switch shape {
		case toolsChat:
			tl = tool{t.Get("function.name").Str, t.Get("function.parameters")}
		case toolsResponses:
			tl = tool{t.Get("name").Str, t.Get("parameters")}
		default:
			tl = tool{t.Get("name").Str, t.Get("input_schema")}
		}
		if tl.name != "" {
			list = append(list, tl)
		}
		return true
	})
	if len(list) == 0 {
		return tool{}, false
	}
	choice := c.root.Get("tool_choice")
	forced, named := false, ""
	switch {
	case choice.Type == gjson.String:
		switch choice.Str {
		case "none":
			return tool{}, false
		case "required", "any":
			forced = true
		}
	case choice.IsObject():
		switch choice.Get("type").Str {
		case "none":
			return tool{}, false
		case "auto":
		case "any", "required":
			forced = true
		default: // "function" or "tool" naming one
			named = choice.Get("function.name").Str
			if named == "" {
				named = choice.Get("name").Str
			}
			forced = true
		}
	}
	if !forced && !containsFold(lastText, "weather") &&
		!truthy(c.r.Header.Get("X-Sim-Tool-Call")) && c.root.Get("sim.tool_call").Type != gjson.True {
		return tool{}, false
	}
	if named != "" {
		for _, t := range list {
			if t.name == named {
				return t, true
			}
		}
	}
	for _, t := range list {
		if containsFold(t.name, "weather") {
			return t, true
		}
	}
	return list[0], true
}

// buildArgs returns deterministic arguments for a tool's JSON schema: one member per
// property, `{"a": v, "b": w}` with single spaces so each fragment after a space is one
// token. Values: the first enum value; strings "Stockholm" for location/city/place-like
// names, else a generated word; numbers and integers 1, 2, ...; booleans true; arrays [];
// objects {}. A schema without properties gives "{}".
func buildArgs(schema gjson.Result, seed uint64) string {
	props := schema.Get("properties")
	if !props.IsObject() {
		return "{}"
	}
	b := []byte{'{'}
	i := 0
	props.ForEach(func(k, p gjson.Result) bool {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = jsonenc.AppendString(b, k.String())
		b = append(b, ": "...)
		switch enum := p.Get("enum"); {
		case enum.IsArray() && len(enum.Array()) > 0:
			b = append(b, enum.Array()[0].Raw...)
		default:
			switch p.Get("type").String() {
			case "string":
				name := k.String()
				if containsFold(name, "location") || containsFold(name, "city") || containsFold(name, "place") {
					b = jsonenc.AppendString(b, "Stockholm")
				} else {
					b = jsonenc.AppendString(b, word(seed, i))
				}
			case "number", "integer":
				b = strconv.AppendInt(b, int64(i+1), 10)
			case "boolean":
				b = append(b, "true"...)
			case "array":
				b = append(b, "[]"...)
			case "object":
				b = append(b, "{}"...)
			default:
				b = append(b, "null"...)
			}
		}
		i++
		return true
	})
	b = append(b, '}')
	return string(b)
}

// containsFold reports whether s contains the lower-case ASCII word sub, ignoring case.
func containsFold(s, sub string) bool {
	n := len(sub)
	for i := 0; i+n <= len(s); i++ {
		j := 0
		for ; j < n; j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != sub[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}
