package translate

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestDeltaEventsAsMarshalled: the hand-encoded delta events are byte for byte what
// marshal makes of their event types, for text that needs escaping of every kind.
func TestDeltaEventsAsMarshalled(t *testing.T) {
	texts := []string{"Hej", "", `quote" back\slash`, "line\nfeed\ttab\r\b\f\x00\x1f", "<&>", "é ∑ 😀", "\u2028\u2029", "bad \xff utf-8 \xe2\x80"}
	for _, text := range texts {
		chunk, err := json.Marshal(map[string]any{"id": "chatcmpl-abc", "choices": []any{
			map[string]any{"index": 0, "delta": map[string]any{"content": text}}}})
		if err != nil {
			t.Fatal(err)
		}
		var got [][]byte
		keep := func(event, data []byte) error {
			got = append(got, bytes.Clone(data))
			return nil
		}
		ms := NewChatToMessagesStream("m", keep)
		if err := ms.Feed(chunk); err != nil {
			t.Fatal(err)
		}
		rs := NewChatToResponsesStream("m", keep)
		if err := rs.Feed(chunk); err != nil {
			t.Fatal(err)
		}
		// The decoded content: invalid UTF-8 arrives as U+FFFD.
		var c struct {
			Choices []struct {
				Delta struct{ Content string }
			}
		}
		_ = json.Unmarshal(chunk, &c)
		content := c.Choices[0].Delta.Content
		var want [][]byte
		add := func(v any) {
			b, err := marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, b)
		}
		if content != "" {
			// Messages: message_start, content_block_start, then the delta.
			add(evBlockDelta{Type: "content_block_delta", Index: 0, Delta: textDelta{Type: "text_delta", Text: content}})
			// Responses: created, in_progress, output_item.added, content_part.added, then the delta.
			add(evTextDelta{Type: "response.output_text.delta", SequenceNumber: 4, ItemID: "msg_abc_0", Delta: content, Logprobs: []any{}})
			if len(got) != 3+5 {
				t.Fatalf("%q: %d events", text, len(got))
			}
			check := func(g, w []byte) {
				if !bytes.Equal(g, w) {
					t.Errorf("%q:\n got %s\nwant %s", text, g, w)
				}
			}
			check(got[2], want[0])
			check(got[7], want[1])
		}
		args := `{"q":"` + text + `"}`
		ms.open = 3
		if err := ms.inputDelta(args); err != nil {
			t.Fatal(err)
		}
		b, _ := marshal(evBlockDelta{Type: "content_block_delta", Index: 3, Delta: inputJSONDelta{Type: "input_json_delta", PartialJSON: args}})
		if last := got[len(got)-1]; !bytes.Equal(last, b) {
			t.Errorf("input_json_delta %q:\n got %s\nwant %s", text, last, b)
		}
		rs.items = append(rs.items, &respItem{call: true, id: "fc_abc_1"})
		rs.open = len(rs.items) - 1
		seq := rs.seq
		if err := rs.argsDelta(args); err != nil {
			t.Fatal(err)
		}
		b, _ = marshal(evArgsDelta{Type: "response.function_call_arguments.delta", SequenceNumber: seq, ItemID: "fc_abc_1", OutputIndex: rs.open, Delta: args})
		if last := got[len(got)-1]; !bytes.Equal(last, b) {
			t.Errorf("function_call_arguments.delta %q:\n got %s\nwant %s", text, last, b)
		}
	}
}
