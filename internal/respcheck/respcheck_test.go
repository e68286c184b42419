package respcheck

import (
	"fmt"
	"strings"
	"testing"
)

// ev builds an event's data with its sequence number.
func ev(seq int, typ, rest string) string {
	return fmt.Sprintf(`{"type":%q,"sequence_number":%d%s}`, typ, seq, rest)
}

const created = `,"response":{"id":"resp_1","status":"in_progress","output":[]}`

func TestStream(t *testing.T) {
	rsAdded := `,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[],"content":[]}`
	rsPart := `,"item_id":"rs_1","output_index":0,"content_index":0,"part":{"type":"reasoning_text","text":""}`
	rsDelta := `,"item_id":"rs_1","output_index":0,"content_index":0,"delta":"hm"`
	msgAdded := `,"output_index":0,"item":{"id":"msg_1","type":"message","role":"assistant","content":[]}`
	msgPart := `,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}`
	msgDelta := `,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hej"`
	msgDone := `,"output_index":0,"item":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"Hej"}]}`
	done := `,"response":{"id":"resp_1","status":"completed","output":[{"id":"msg_1","type":"message"}]}`
	tests := []struct {
		name   string
		events [][2]string // type, members after the sequence number
		err    string      // "" when the helpers accept the stream
	}{
		{"text", [][2]string{{"response.created", created}, {"response.output_item.added", msgAdded},
			{"response.content_part.added", msgPart}, {"response.output_text.delta", msgDelta},
			{"response.output_text.done", `,"item_id":"msg_1","output_index":0,"content_index":0,"text":"Hej"`},
			{"response.content_part.done", `,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"Hej"}`},
			{"response.output_item.done", msgDone}, {"response.completed", done}}, ""},
		{"reasoning delta without its part", [][2]string{{"response.created", created},
			{"response.output_item.added", rsAdded}, {"response.reasoning_text.delta", rsDelta}}, "missing content at index 0"},
		{"reasoning with its part", [][2]string{{"response.created", created},
			{"response.output_item.added", rsAdded}, {"response.content_part.added", rsPart},
			{"response.reasoning_text.delta", rsDelta}}, ""},
		{"text delta without its part", [][2]string{{"response.created", created},
			{"response.output_item.added", msgAdded}, {"response.output_text.delta", msgDelta}}, "missing content at index 0"},
		{"delta before its item", [][2]string{{"response.created", created},
			{"response.output_text.delta", msgDelta}}, "missing output at index 0"},
		{"first event not created", [][2]string{{"response.in_progress", created}}, "response.created"},
		{"unknown event", [][2]string{{"response.created", created}, {"response.thinking", ""}}, "unhandled"},
		{"item at a gap", [][2]string{{"response.created", created},
			{"response.output_item.added", strings.Replace(msgAdded, `"output_index":0`, `"output_index":1`, 1)}}, "missing output at index 1"},
		{"wrong item id", [][2]string{{"response.created", created}, {"response.output_item.added", msgAdded},
			{"response.content_part.added", strings.Replace(msgPart, "msg_1", "msg_2", 1)}}, "expected item_id"},
		{"reasoning part in a message", [][2]string{{"response.created", created}, {"response.output_item.added", msgAdded},
			{"response.content_part.added", strings.Replace(rsPart, "rs_1", "msg_1", 1)}}, "expected output item type"},
		{"completed with an open item", [][2]string{{"response.created", created}, {"response.output_item.added", msgAdded},
			{"response.completed", done}}, "never done"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Stream
			var err error
			for i, e := range tt.events {
				if err = s.Add(e[0], []byte(ev(i, e[0], e[1]))); err != nil {
					break
				}
			}
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("error %v, want %q", err, tt.err)
			}
		})
	}
}

func TestStreamSequence(t *testing.T) {
	var s Stream
	if err := s.Add("response.created", []byte(ev(1, "response.created", created))); err == nil {
		t.Fatal("a stream starting at sequence 1 was accepted")
	}
}
