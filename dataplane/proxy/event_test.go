package proxy

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/reqparse"
)

// chatEventRef is the check of a chat or text completion event as inspect ran it before
// chatEvent: validation (gjson's validator up to shallowEvent, reqparse.ValidJSON beyond),
// then gjson lookups of usage and choices. chatEvent must answer exactly as it does.
func chatEventRef(data []byte) (usage gjson.Result, noChoices, ok bool) {
	valid := false
	if len(data) > shallowEvent {
		valid = reqparse.ValidJSON(data)
	} else {
		valid = gjson.ValidBytes(data)
	}
	if !valid {
		return gjson.Result{}, false, false
	}
	// A duplicated error, choices or usage member makes the event malformed: a JSON client
	// keeps the last, gjson reads the first.
	seen := map[string]bool{}
	dup := false
	gjson.ParseBytes(data).ForEach(func(k, _ gjson.Result) bool {
		if k.Str == "error" || k.Str == "choices" || k.Str == "usage" {
			dup = dup || seen[k.Str]
			seen[k.Str] = true
		}
		return true
	})
	if dup {
		return gjson.Result{}, false, false
	}
	if data[0] != '{' || !bytes.Contains(data, []byte(`"usage"`)) {
		return gjson.Result{}, false, true
	}
	u := gjson.GetBytes(data, "usage")
	if !u.IsObject() {
		return gjson.Result{}, false, true
	}
	ch := gjson.GetBytes(data, "choices")
	return u, !ch.Exists() || ch.Type == gjson.Null || (ch.IsArray() && len(ch.Array()) == 0), true
}

// reportsErrorRef is the check for an error reported inside a stream before chatEvent made it.
func reportsErrorRef(data []byte) bool {
	e := gjson.GetBytes(data, "error")
	return e.Exists() && e.Type != gjson.Null
}

var chatEventSeeds = []string{
	`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hej"},"finish_reason":null}]}`,
	`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hej"},"finish_reason":null}],"usage":null}`,
	`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":2,"total_tokens":14}}`,
	`{"choices":[ ],"usage":{"prompt_tokens":1}}`,
	`{"choices":[ 1 ],"usage":{"prompt_tokens":1}}`,
	`{"choices":null,"usage":{"prompt_tokens":1}}`,
	`{"choices":{},"usage":{"prompt_tokens":1}}`,
	`{"usage":{"prompt_tokens":1}}`,
	`{"usage":{"prompt_tokens":1},"usage":{"prompt_tokens":2},"choices":[],"choices":[1]}`,
	`{"us\u0061ge":{"prompt_tokens":1},"usage":{"prompt_tokens":2}}`,
	`{"us\u0061ge":{"prompt_tokens":1}}`,
	`{"x":"\"usage\":{}","usage" :	{"prompt_tokens":3} , "choices" : [ ] }`,
	`{"x":{"usage":{"prompt_tokens":1}}}`,
	`{"usage":[1],"choices":[]}`,
	`{"usage":"x"}`,
	` {"usage":{"prompt_tokens":1}}`,
	`[{"usage":{}}]`,
	`{"usage":{"prompt_tokens":1}`,
	`{"usage":{"prompt_tokens":1}}x`,
	`"usage"`,
	`{"\"usage":{},"usage":{}}`,
	`{"usage":{"a":1}` + strings.Repeat(`,"k":1`, 40) + `}`,
	`{"usage":{"a":1},"choices":[],"d":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`,
	`{"usage":{"a":1},"d":` + strings.Repeat("[", 3000) + strings.Repeat("]", 3000) + `}`,
	`{"usage":{"a":1},"choices":[],"pad":"` + strings.Repeat("x", shallowEvent) + `"}`,
	`{"error":{"message":"boom","code":500}}`,
	`{"error":"boom","error_type":"generation"}`,
	`{"error":null,"choices":[]}`,
	`{"object":"error","message":"boom"}`,
	` {"error":{"message":"boom"}}`,
	`{"err\u006fr":{"message":"boom"}}`,
	`{"choices":[{"delta":{"content":"\"error\": x"}}],"error":{}}`,
	`{"choices":[{"error":{"message":"nested"}}]}`,
	`{"a":1` + strings.Repeat(`,"k":1`, 40) + `,"error":{"message":"late"}}`,
	`["error",{"error":1}]`,
}

// TestChatEventMatchesReference holds chatEvent to the check it replaced on cases that
// take each of its paths (escaped keys, duplicates, many members, deep nesting, large events).
func TestChatEventMatchesReference(t *testing.T) {
	var m reqparse.EventMembers
	for _, s := range chatEventSeeds {
		checkChatEvent(t, &m, []byte(s))
	}
}

// FuzzChatEvent: chatEvent answers exactly as chatEventRef on any event.
func FuzzChatEvent(f *testing.F) {
	for _, s := range chatEventSeeds {
		f.Add(s)
	}
	var m reqparse.EventMembers
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" {
			return // inspect never checks an empty data field
		}
		checkChatEvent(t, &m, []byte(s))
	})
}

func checkChatEvent(t *testing.T, m *reqparse.EventMembers, data []byte) {
	t.Helper()
	c, ok := chatEvent(data, m)
	u, no, rep := c.usage, c.noChoices, c.reported
	ru, rno, rok := chatEventRef(data)
	rrep := rok && bytes.Contains(data, errorKey) && reportsErrorRef(data)
	if ok != rok || u.IsObject() != ru.IsObject() || u.IsObject() && (u.Raw != ru.Raw || no != rno) || rep != rrep {
		t.Fatalf("%.200q: chatEvent = %q %v %v %v, reference = %q %v %v %v", data, u.Raw, no, rep, ok, ru.Raw, rno, rrep, rok)
	}
}

// BenchmarkChatEvent is the per-event check of a chat chunk, against the reference (the
// check before chatEvent).
func BenchmarkChatEvent(b *testing.B) {
	for _, c := range []struct{ name, ev string }{
		{"chunk", chatEventSeeds[0]}, {"chunk-usage-null", chatEventSeeds[1]}, {"usage", chatEventSeeds[2]},
	} {
		data := []byte(c.ev)
		b.Run(c.name, func(b *testing.B) {
			var m reqparse.EventMembers
			b.ReportAllocs()
			for b.Loop() {
				chatEvent(data, &m)
			}
		})
		b.Run(c.name+"/reference", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				chatEventRef(data)
			}
		})
	}
}
