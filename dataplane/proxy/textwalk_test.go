package proxy

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/reqparse"
	"github.com/sekgate/gateway/dataplane/tokens"
)

var textSeeds = []string{
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" Hej"}}`,
	`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"get_weather","input":{}}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Malm\u00f6\"}"}}`,
	`{"delta":{"text":"","text":"two values"},"x":[1,"a",{"reasoning":"r","reasoning_content":"rr"}]}`,
	`{"name":"` + string(make([]byte, 0)) + `","data":"opaque","signature":"s","usage":{"output_tokens":3}}`,
	`"top-level string"`, `[{"text":"a"},"b",null,true,1.5]`,
	`{"te\u0078t":"escaped key","logprobs":[{"token":"x"}]}`,
}

// FuzzTextWalk: the walker's count of an event's text is tokens.TextBytes's (read with
// gjson) on any valid JSON, and a Messages delta read from a scan's notes is the same as
// read whole.
func FuzzTextWalk(f *testing.F) {
	for _, s := range textSeeds {
		f.Add(s)
	}
	var m reqparse.EventMembers
	f.Fuzz(func(t *testing.T, s string) {
		if !gjson.Valid(s) {
			return
		}
		w := walker{b: []byte(s)}
		if got, want := w.value(), tokens.TextBytes(gjson.Parse(s)); got != want {
			t.Fatalf("%.300q: walker %d, gjson %d", s, got, want)
		}
		if !reqparse.ScanEvent([]byte(s), &m) {
			return
		}
		if got, ok := messagesDelta([]byte(s), &m); ok && got != messagesOutput([]byte(s)) {
			t.Fatalf("%.300q: from the notes %+v, whole %+v", s, got, messagesOutput([]byte(s)))
		}
		var tally responsesTally
		_, _ = tally.delta([]byte("response.output_text.delta"), []byte(s), nil)
		_ = tally.add([]byte("response.completed"), []byte(s))
		_ = tally.add([]byte("response.output_item.done"), []byte(s))
		_ = tally.add([]byte("response.unknown"), []byte(s))
	})
}
