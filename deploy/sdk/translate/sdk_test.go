package translate_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3/responses"

	"github.com/sekgate/gateway/dataplane/translate"
	"github.com/sekgate/gateway/internal/respcheck"
)

// These tests read the translated answers with the official SDKs' own types and
// accumulators, so a shape the SDKs cannot read fails here, not at a customer. They read
// the translate package's own test inputs.
const testdata = "../../../dataplane/translate/testdata"

// streamer is what the package's stream translators share.
type streamer interface {
	Feed([]byte) error
	Finish() error
}

type sdkEvent struct{ event, data string }

func translateStream(t *testing.T, file string, mk func(w func(event, data []byte) error) streamer) []sdkEvent {
	t.Helper()
	sse, err := os.ReadFile(filepath.Join(testdata, "streams", file))
	if err != nil {
		t.Fatal(err)
	}
	var evs []sdkEvent
	s := mk(func(event, data []byte) error {
		evs = append(evs, sdkEvent{string(event), string(data)})
		return nil
	})
	for _, line := range strings.Split(string(sse), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			if err := s.Finish(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := s.Feed([]byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	return evs
}

func TestAnthropicSDKAccumulatesTranslatedStream(t *testing.T) {
	tests := []struct {
		file    string
		stop    anthropic.StopReason
		text    string
		tools   map[string]string // tool_use id -> input JSON
		in, out int64
	}{
		{"text_with_usage.sse", anthropic.StopReasonEndTurn, `Hej! Hur mår du? <3 & "citat"`, nil, 21, 9},
		{"tool_call_fragments.sse", anthropic.StopReasonToolUse, "Let me check the weather.",
			map[string]string{"chatcmpl-tool-9f8e": `{"city": "Stockholm", "unit": "celsius"}`}, 312, 29},
		{"parallel_tool_calls.sse", anthropic.StopReasonToolUse, "",
			map[string]string{"call_A": `{"city":"Oslo"}`, "call_B": `{"tz":"Europe/Oslo"}`}, 120, 44},
		{"length_stop.sse", anthropic.StopReasonMaxTokens, "Once upon a time", nil, 8, 4},
		{"stop_sequence.sse", anthropic.StopReasonStopSequence, "1, 2, 3", nil, 10, 7},
		{"tool_call_single_chunk_stop.sse", anthropic.StopReasonToolUse, "", map[string]string{"call_x1y2": `{"q":"fika"}`}, 55, 12},
		{"same_index_two_calls.sse", anthropic.StopReasonToolUse, "",
			map[string]string{"call_one": `{"city":"Umeå"}`, "call_two": `{"city":"Luleå"}`}, 40, 20},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			evs := translateStream(t, tt.file, func(w func(event, data []byte) error) streamer {
				return translate.NewChatToMessagesStream("client-model", w)
			})
			var msg anthropic.Message
			for _, e := range evs {
				var ev anthropic.MessageStreamEventUnion
				if err := json.Unmarshal([]byte(e.data), &ev); err != nil {
					t.Fatalf("SDK cannot read %s: %v", e.event, err)
				}
				if ev.Type != e.event {
					t.Fatalf("SSE event name %q but data type %q", e.event, ev.Type)
				}
				if err := msg.Accumulate(ev); err != nil {
					t.Fatalf("Accumulate(%s): %v", e.data, err)
				}
			}
			if msg.StopReason != tt.stop {
				t.Errorf("stop_reason %q, want %q", msg.StopReason, tt.stop)
			}
			if tt.stop == anthropic.StopReasonStopSequence && msg.StopSequence != "END" {
				t.Errorf("stop_sequence %q", msg.StopSequence)
			}
			var text strings.Builder
			tools := map[string]string{}
			for _, b := range msg.Content {
				switch b.Type {
				case "text":
					text.WriteString(b.Text)
				case "tool_use":
					tools[b.ID] = string(b.Input)
				}
			}
			if text.String() != tt.text {
				t.Errorf("text %q, want %q", text.String(), tt.text)
			}
			if len(tools) != len(tt.tools) {
				t.Errorf("tool calls %v, want %v", tools, tt.tools)
			}
			for id, want := range tt.tools {
				if tools[id] != want {
					t.Errorf("tool %s input %s, want %s", id, tools[id], want)
				}
			}
			// Cached prompt tokens are counted beside input_tokens, as cache reads.
			if in := msg.Usage.InputTokens + msg.Usage.CacheReadInputTokens; in != tt.in || msg.Usage.OutputTokens != tt.out {
				t.Errorf("usage %d+%d/%d, want %d/%d", msg.Usage.InputTokens, msg.Usage.CacheReadInputTokens, msg.Usage.OutputTokens, tt.in, tt.out)
			}
		})
	}
}

func TestAnthropicSDKReadsTranslatedMessage(t *testing.T) {
	in, err := os.ReadFile(filepath.Join(testdata, "messages_response", "tool_calls.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := translate.ChatToMessagesResponse(in, "client-model")
	if err != nil {
		t.Fatal(err)
	}
	var msg anthropic.Message
	if err := json.Unmarshal(out, &msg); err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != anthropic.StopReasonToolUse || len(msg.Content) != 3 || msg.Content[1].Name != "get_weather" ||
		string(msg.Content[1].Input) != `{"city":"Oslo"}` || string(msg.Content[2].Input) != `{}` || !strings.HasPrefix(msg.ID, "msg_") {
		t.Fatalf("unexpected message: %s", out)
	}
}

func TestOpenAISDKReadsTranslatedResponsesStream(t *testing.T) {
	tests := []struct {
		file      string
		status    responses.ResponseStatus
		reasoning string
		text      string
		calls     map[string]string // call_id -> arguments
		in        int64
		out       int64
	}{
		{"text_with_usage.sse", "completed", "", `Hej! Hur mår du? <3 & "citat"`, nil, 21, 9},
		{"tool_call_fragments.sse", "completed", "", "Let me check the weather.",
			map[string]string{"chatcmpl-tool-9f8e": `{"city": "Stockholm", "unit": "celsius"}`}, 312, 29},
		{"parallel_tool_calls.sse", "completed", "", "", map[string]string{"call_A": `{"city":"Oslo"}`, "call_B": `{"tz":"Europe/Oslo"}`}, 120, 44},
		{"length_stop.sse", "incomplete", "", "Once upon a time", nil, 8, 4},
		{"same_index_two_calls.sse", "completed", "", "", map[string]string{"call_one": `{"city":"Umeå"}`, "call_two": `{"city":"Luleå"}`}, 40, 20},
		{"reasoning_then_text.sse", "completed", "The user greets me.", "Hej där!", nil, 12, 5},
		{"reasoning_then_tool.sse", "completed", "Need the weather.", "", map[string]string{"call_w1": `{"city": "Kiruna"}`}, 30, 9},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			evs := translateStream(t, tt.file, func(w func(event, data []byte) error) streamer {
				return translate.NewChatToResponsesStream("client-model", w)
			})
			checkHelperOrder(t, evs, tt.reasoning)
			var final responses.Response
			args := map[string]string{} // item id -> arguments accumulated from deltas
			var deltas strings.Builder
			for i, e := range evs {
				var ev responses.ResponseStreamEventUnion
				if err := json.Unmarshal([]byte(e.data), &ev); err != nil {
					t.Fatalf("SDK cannot read %s: %v", e.event, err)
				}
				if ev.Type != e.event || ev.SequenceNumber != int64(i) {
					t.Fatalf("event %d: name %q type %q sequence %d", i, e.event, ev.Type, ev.SequenceNumber)
				}
				switch ev.Type {
				case "response.output_text.delta":
					deltas.WriteString(ev.Delta)
				case "response.function_call_arguments.delta":
					args[ev.ItemID] += ev.Delta
				case "response.function_call_arguments.done":
					if args[ev.ItemID] != ev.Arguments {
						t.Errorf("deltas %q differ from done %q", args[ev.ItemID], ev.Arguments)
					}
				case "response.completed", "response.incomplete":
					final = ev.Response
				}
			}
			if final.Status != tt.status {
				t.Fatalf("status %q, want %q", final.Status, tt.status)
			}
			if tt.status == "incomplete" && final.IncompleteDetails.Reason != "max_output_tokens" {
				t.Errorf("incomplete reason %q", final.IncompleteDetails.Reason)
			}
			if final.OutputText() != tt.text || deltas.String() != tt.text {
				t.Errorf("text %q (deltas %q), want %q", final.OutputText(), deltas.String(), tt.text)
			}
			calls := map[string]string{}
			for _, it := range final.Output {
				if it.Type == "function_call" {
					calls[it.CallID] = it.Arguments.OfString
				}
			}
			if len(calls) != len(tt.calls) {
				t.Errorf("calls %v, want %v", calls, tt.calls)
			}
			for id, want := range tt.calls {
				if calls[id] != want {
					t.Errorf("call %s arguments %s, want %s", id, calls[id], want)
				}
			}
			if final.Usage.InputTokens != tt.in || final.Usage.OutputTokens != tt.out || final.Usage.TotalTokens != tt.in+tt.out {
				t.Errorf("usage %+v", final.Usage)
			}
		})
	}
}

// checkHelperOrder feeds a translated stream to the event-order rules of the SDKs' stream
// helpers (openai-node's responses.stream): each item added before its content parts,
// each part added before its deltas. It wants reasoning as the first item's text when
// reasoning is not empty.
func checkHelperOrder(t *testing.T, evs []sdkEvent, reasoning string) {
	t.Helper()
	var st respcheck.Stream
	for i, e := range evs {
		if err := st.Add(e.event, []byte(e.data)); err != nil {
			t.Fatalf("event %d: the SDK stream helper would throw: %v", i, err)
		}
	}
	if kind, _ := st.Terminal(); kind == "" {
		t.Fatal("no terminal event")
	}
	items := st.Items()
	if reasoning == "" {
		for _, it := range items {
			if it.Type == "reasoning" {
				t.Errorf("reasoning item %q in an answer without reasoning", it.Text())
			}
		}
		return
	}
	if len(items) < 2 || items[0].Type != "reasoning" || items[0].Text() != reasoning {
		t.Fatalf("items %+v, want reasoning %q first", items, reasoning)
	}
}

func TestOpenAISDKReadsTranslatedResponse(t *testing.T) {
	in, err := os.ReadFile(filepath.Join(testdata, "responses_response", "length.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := translate.ChatToResponsesResponse(in, "client-model")
	if err != nil {
		t.Fatal(err)
	}
	var r responses.Response
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	if r.Status != "incomplete" || r.IncompleteDetails.Reason != "max_output_tokens" || r.OutputText() != "Once upon a time" ||
		r.Usage.TotalTokens != 12 || !strings.HasPrefix(r.ID, "resp_") {
		t.Fatalf("unexpected response: %s", out)
	}
}
