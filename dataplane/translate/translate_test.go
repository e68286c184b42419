package translate

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

func TestUsage(t *testing.T) {
	tests := []struct {
		name string
		fn   func([]byte) (Usage, bool)
		in   string
		want Usage
		ok   bool
	}{
		{"chat", UsageFromChat, `{"prompt_tokens":21,"completion_tokens":9,"total_tokens":30}`, Usage{InputTokens: 21, OutputTokens: 9}, true},
		{"chat cached tokens billed once", UsageFromChat,
			`{"prompt_tokens":100,"completion_tokens":5,"total_tokens":105,"prompt_tokens_details":{"cached_tokens":80}}`, Usage{InputTokens: 100, OutputTokens: 5}, true},
		{"chat reasoning inside completion", UsageFromChat,
			`{"prompt_tokens":10,"completion_tokens":50,"total_tokens":60,"completion_tokens_details":{"reasoning_tokens":40}}`, Usage{InputTokens: 10, OutputTokens: 50}, true},
		{"chat without completion_tokens", UsageFromChat, `{"prompt_tokens":7,"total_tokens":7}`, Usage{InputTokens: 7, OutputTokens: 0}, true},
		{"embeddings style", UsageFromChat, `{"prompt_tokens":12,"total_tokens":12}`, Usage{InputTokens: 12, OutputTokens: 0}, true},
		{"chat derived completion", UsageFromChat, `{"prompt_tokens":7,"total_tokens":10}`, Usage{InputTokens: 7, OutputTokens: 3}, true},
		{"chat negative clamped", UsageFromChat, `{"prompt_tokens":-1,"completion_tokens":-2}`, Usage{Invalid: true}, true},
		{"chat over int64 saturates", UsageFromChat, `{"prompt_tokens":1,"completion_tokens":9223372036854775808}`,
			Usage{InputTokens: 1, OutputTokens: 9223372036854775807, Invalid: true}, true},
		{"chat 1e999", UsageFromChat, `{"prompt_tokens":1e999,"completion_tokens":1}`,
			Usage{InputTokens: 9223372036854775807, OutputTokens: 1, Invalid: true}, true},
		{"chat float", UsageFromChat, `{"prompt_tokens":12.7,"completion_tokens":"5"}`, Usage{InputTokens: 12, Invalid: true}, true},
		{"chat total below prompt", UsageFromChat, `{"prompt_tokens":9,"total_tokens":3}`, Usage{InputTokens: 9, Invalid: true}, true},
		{"messages cache sum saturates", UsageFromMessages,
			`{"input_tokens":9223372036854775807,"cache_read_input_tokens":9223372036854775807,"output_tokens":1}`,
			Usage{InputTokens: 9223372036854775807, OutputTokens: 1}, true},
		{"messages null counts", UsageFromMessages, `{"input_tokens":3,"cache_read_input_tokens":null,"output_tokens":4}`,
			Usage{InputTokens: 3, OutputTokens: 4}, true},
		{"chat null", UsageFromChat, `null`, Usage{}, false},
		{"chat empty object", UsageFromChat, `{}`, Usage{}, false},
		{"chat garbage", UsageFromChat, `[1`, Usage{}, false},
		{"messages cache adds", UsageFromMessages,
			`{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":5}`, Usage{InputTokens: 1110, OutputTokens: 5}, true},
		{"messages plain", UsageFromMessages, `{"input_tokens":3,"output_tokens":4}`, Usage{InputTokens: 3, OutputTokens: 4}, true},
		{"messages null", UsageFromMessages, `null`, Usage{}, false},
		{"responses cached inside", UsageFromResponses,
			`{"input_tokens":100,"input_tokens_details":{"cached_tokens":90},"output_tokens":5,"total_tokens":105}`, Usage{InputTokens: 100, OutputTokens: 5}, true},
		{"responses absent", UsageFromResponses, ``, Usage{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.fn([]byte(tt.in))
			if got != tt.want || ok != tt.ok {
				t.Fatalf("got %+v %v, want %+v %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestRequestTranslationRefusals(t *testing.T) {
	tests := []struct {
		name string
		fn   func([]byte, string) ([]byte, error)
		body string
		want error
	}{
		{"messages not json", MessagesToChat, `{`, ErrInvalidRequest},
		{"messages array body", MessagesToChat, `[]`, ErrInvalidRequest},
		{"messages too deep", MessagesToChat, strings.Repeat("[", 100000), ErrInvalidRequest},
		{"messages url image", MessagesToChat, `{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://x"}}]}]}`, ErrUnsupported},
		{"messages pdf", MessagesToChat, `{"messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"AA"}}]}]}`, ErrUnsupported},
		{"messages hosted tool", MessagesToChat, `{"messages":[],"tools":[{"type":"web_search_20250305","name":"w"}]}`, ErrUnsupported},
		{"messages unknown block", MessagesToChat, `{"messages":[{"role":"user","content":[{"type":"server_tool_use"}]}]}`, ErrUnsupported},
		{"messages unknown assistant block", MessagesToChat, `{"messages":[{"role":"assistant","content":[{"type":"web_search_tool_result"}]}]}`, ErrUnsupported},
		{"messages bad tool_choice", MessagesToChat, `{"messages":[],"tool_choice":{"type":"maybe"}}`, ErrUnsupported},
		{"messages system image", MessagesToChat, `{"messages":[],"system":[{"type":"image"}]}`, ErrUnsupported},
		{"responses not object", ResponsesToChat, `"x"`, ErrInvalidRequest},
		{"responses item_reference", ResponsesToChat, `{"input":[{"type":"item_reference","id":"x"}]}`, ErrUnsupported},
		{"responses input_file", ResponsesToChat, `{"input":[{"role":"user","content":[{"type":"input_file","file_data":"AA"}]}]}`, ErrUnsupported},
		{"responses remote image", ResponsesToChat, `{"input":[{"role":"user","content":[{"type":"input_image","image_url":"https://x/a.png"}]}]}`, ErrUnsupported},
		{"responses hosted tool", ResponsesToChat, `{"input":"x","tools":[{"type":"web_search"}]}`, ErrUnsupported},
		{"responses tool_choice hosted", ResponsesToChat, `{"input":"x","tool_choice":{"type":"file_search"}}`, ErrUnsupported},
		{"responses tool_choice unknown string", ResponsesToChat, `{"input":"x","tool_choice":"sometimes"}`, ErrUnsupported},
		{"responses image in tool output", ResponsesToChat, `{"input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"data:x"}]}]}`, ErrUnsupported},
		{"responses format grammar", ResponsesToChat, `{"input":"x","text":{"format":{"type":"grammar"}}}`, ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tt.fn([]byte(tt.body), "u")
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v (%s), want %v", err, out, tt.want)
			}
		})
	}
}

func TestResponseTranslationErrors(t *testing.T) {
	for name, body := range map[string]string{
		"not json":          `{`,
		"no choices":        `{"id":"x","choices":[]}`,
		"error object":      `{"error":{"message":"boom"}}`,
		"bad tool args":     `{"choices":[{"message":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":"{\"a\":"}}]},"finish_reason":"tool_calls"}]}`,
		"tool args not obj": `{"choices":[{"message":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":"[1]"}}]},"finish_reason":"tool_calls"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := ChatToMessagesResponse([]byte(body), "m"); !errors.Is(err, ErrUpstream) {
				t.Fatalf("ChatToMessagesResponse: %v", err)
			}
			if name == "bad tool args" || name == "tool args not obj" {
				return // Responses-style passes arguments through as a string
			}
			if _, _, err := ChatToResponsesResponse([]byte(body), "m"); !errors.Is(err, ErrUpstream) {
				t.Fatalf("ChatToResponsesResponse: %v", err)
			}
		})
	}
}

type recorder struct {
	events []string
	data   []gjson.Result
}

func (r *recorder) write(event, data []byte) error {
	if !json.Valid(data) {
		return fmt.Errorf("invalid JSON in %s: %s", event, data)
	}
	r.events = append(r.events, string(event))
	r.data = append(r.data, gjson.ParseBytes(append([]byte(nil), data...)))
	return nil
}

func chunk(delta string, finish string) []byte {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return []byte(`{"id":"chatcmpl-x","created":1,"choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`)
}

func toolChunk(idx int, id, name, args string) []byte {
	tc := map[string]any{"index": idx, "function": map[string]string{"arguments": args}}
	if id != "" {
		tc["id"] = id
		tc["type"] = "function"
	}
	if name != "" {
		tc["function"].(map[string]string)["name"] = name
	}
	d, _ := json.Marshal(map[string]any{"tool_calls": []any{tc}})
	return chunk(string(d), "")
}

func TestStreamRefusesInterleavedToolFragments(t *testing.T) {
	for name, mk := range map[string]func(w func(event, data []byte) error) streamer{
		"messages":  func(w func(event, data []byte) error) streamer { return NewChatToMessagesStream("m", w) },
		"responses": func(w func(event, data []byte) error) streamer { return NewChatToResponsesStream("m", w) },
	} {
		t.Run(name, func(t *testing.T) {
			var r recorder
			s := mk(r.write)
			for _, c := range [][]byte{toolChunk(0, "a", "f", `{"x":`), toolChunk(1, "b", "g", `{}`)} {
				if err := s.Feed(c); err != nil {
					t.Fatal(err)
				}
			}
			// a repeated id without arguments is harmless
			if err := s.Feed(toolChunk(0, "a", "", "")); err != nil {
				t.Fatal(err)
			}
			if err := s.Feed(toolChunk(0, "", "", `1}`)); !errors.Is(err, ErrUpstream) {
				t.Fatalf("late fragment for a closed call: %v", err)
			}
			if err := s.Finish(); err == nil {
				t.Fatal("Finish after a failed stream succeeded")
			}
			for _, e := range r.events {
				if e == "message_stop" || e == "response.completed" {
					t.Fatal("terminal event after a failure")
				}
			}
		})
	}
}

// TestStreamFragmentsPreserved splits several tool calls' arguments into random fragments and
// checks that each call's block receives exactly its own fragments, in order.
func TestStreamFragmentsPreserved(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		n := 1 + rng.IntN(4)
		var chunks [][]byte
		want := map[string][]string{}
		if rng.IntN(2) == 0 {
			chunks = append(chunks, chunk(`{"content":"thinking aloud"}`, ""))
		}
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("call_%d", i)
			args := fmt.Sprintf(`{"i":%d,"s":"%s","q":"\"}{"}`, i, strings.Repeat("é", rng.IntN(10)))
			first := true
			for len(args) > 0 {
				k := min(len(args), 1+rng.IntN(6))
				for k < len(args) && !utf8.RuneStart(args[k]) {
					k++ // chunks carry whole characters
				}
				frag := args[:k]
				args = args[k:]
				if first {
					chunks = append(chunks, toolChunk(i, id, fmt.Sprintf("fn%d", i), frag))
					first = false
				} else {
					chunks = append(chunks, toolChunk(i, "", "", frag))
				}
				want[id] = append(want[id], frag)
			}
		}
		chunks = append(chunks, chunk(`{}`, "tool_calls"))

		var mr, rr recorder
		ms, rs := NewChatToMessagesStream("m", mr.write), NewChatToResponsesStream("m", rr.write)
		for _, c := range chunks {
			if err := ms.Feed(c); err != nil {
				t.Fatal(err)
			}
			if err := rs.Feed(c); err != nil {
				t.Fatal(err)
			}
		}
		if err := ms.Finish(); err != nil {
			t.Fatal(err)
		}
		if err := rs.Finish(); err != nil {
			t.Fatal(err)
		}

		// Messages-style: block index -> tool id, then deltas by index.
		blockID := map[int64]string{}
		got := map[string][]string{}
		for i, e := range mr.events {
			d := mr.data[i]
			switch e {
			case "content_block_start":
				if d.Get("content_block.type").Str == "tool_use" {
					blockID[d.Get("index").Int()] = d.Get("content_block.id").Str
				}
			case "content_block_delta":
				if d.Get("delta.type").Str == "input_json_delta" {
					id := blockID[d.Get("index").Int()]
					got[id] = append(got[id], d.Get("delta.partial_json").Str)
				}
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("round %d messages fragments\n got %q\nwant %q", round, got, want)
		}
		if mr.events[len(mr.events)-1] != "message_stop" || mr.data[len(mr.data)-2].Get("delta.stop_reason").Str != "tool_use" {
			t.Fatalf("round %d: bad ending %v", round, mr.events)
		}

		// Responses-style: item id -> call id, deltas by item.
		itemCall := map[string]string{}
		got = map[string][]string{}
		for i, e := range rr.events {
			d := rr.data[i]
			switch e {
			case "response.output_item.added":
				if d.Get("item.type").Str == "function_call" {
					itemCall[d.Get("item.id").Str] = d.Get("item.call_id").Str
				}
			case "response.function_call_arguments.delta":
				id := itemCall[d.Get("item_id").Str]
				got[id] = append(got[id], d.Get("delta").Str)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("round %d responses fragments\n got %q\nwant %q", round, got, want)
		}
		last := rr.data[len(rr.data)-1]
		if last.Get("type").Str != "response.completed" || len(last.Get("response.output").Array()) < n {
			t.Fatalf("round %d: bad ending %s", round, last.Raw)
		}
	}
}

func TestStreamFinishWithoutChunks(t *testing.T) {
	var r recorder
	s := NewChatToMessagesStream("m", r.write)
	if err := s.Finish(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.events, ","); got != "message_start,message_delta,message_stop" {
		t.Fatalf("events %s", got)
	}
	if err := s.Feed(chunk(`{"content":"x"}`, "")); err == nil {
		t.Fatal("Feed after Finish accepted")
	}
	var rr recorder
	rs := NewChatToResponsesStream("m", rr.write)
	if err := rs.Finish(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rr.events, ","); got != "response.created,response.in_progress,response.completed" {
		t.Fatalf("events %s", got)
	}
}

func TestStreamWriteErrorStops(t *testing.T) {
	boom := errors.New("client gone")
	s := NewChatToMessagesStream("m", func(event, data []byte) error { return boom })
	if err := s.Feed(chunk(`{"content":"x"}`, "")); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	rs := NewChatToResponsesStream("m", func(event, data []byte) error { return boom })
	if err := rs.Feed(chunk(`{"content":"x"}`, "")); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
}

func TestStreamUsageFromLastUsageChunk(t *testing.T) {
	// vLLM with continuous usage stats sends usage on every chunk; the last one counts.
	var r recorder
	s := NewChatToMessagesStream("m", r.write)
	for _, c := range []string{
		`{"id":"a","choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`,
		`{"id":"a","choices":[{"index":0,"delta":{"content":"b"}}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`,
		`{"id":"a","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}`,
	} {
		if err := s.Feed([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Finish(); err != nil {
		t.Fatal(err)
	}
	if s.Usage() != (Usage{InputTokens: 5, OutputTokens: 2}) {
		t.Fatalf("usage %+v", s.Usage())
	}
}

func TestIDSuffix(t *testing.T) {
	if got := idSuffix("chatcmpl-abc123"); got != "abc123" {
		t.Errorf("got %q", got)
	}
	a, b := idSuffix("weird id!"), idSuffix("weird id!")
	hex24 := regexp.MustCompile(`^[0-9a-f]{24}$`)
	if a != b || !hex24.MatchString(a) {
		t.Errorf("hashed suffix %q %q", a, b)
	}
	if r1, r2 := idSuffix(""), idSuffix(""); r1 == r2 || !hex24.MatchString(r1) {
		t.Errorf("random suffixes %q %q", r1, r2)
	}
}
