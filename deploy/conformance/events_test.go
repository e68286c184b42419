package conformance

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	anthropic "github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/sekgate/gateway/dataplane/openapi"
	"github.com/sekgate/gateway/internal/poll"
)

// Section "Events": streams end with their terminal signal; broken streams do not.

func streamRaw(t *testing.T, s *Stack, key, path string, body map[string]any) Response {
	t.Helper()
	body["stream"] = true
	r := s.Post(t, path, key, body)
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream %s: %d %q %s", path, r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	return r
}

// /v1/chat/completions: data chunks with choices[].delta and a final usage chunk, ending
// with data: [DONE] (read with the OpenAI SDK's stream reader too).
func TestEvents_ChatStreamEndsWithDone(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	r := streamRaw(t, s, a.Key, "/v1/chat/completions", chatReq(modelChat, "stream_options", map[string]any{"include_usage": true}))
	if err := getSpec(t).CheckStreamTerminal("POST", "/v1/chat/completions", r.Body); err != nil {
		t.Fatal(err)
	}
	events := openapi.ParseSSE(r.Body)
	usage := events[len(events)-2].Data
	if !strings.Contains(usage, `"usage"`) || !strings.Contains(usage, `"prompt_tokens"`) {
		t.Errorf("no final usage chunk before [DONE]: %s", usage)
	}

	stream := oa(t, s, a.Key).Chat.Completions.NewStreaming(ctx(t), openai.ChatCompletionNewParams{
		Model: modelChat, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hej")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content == "" || acc.Usage.TotalTokens <= 0 {
		t.Fatalf("accumulated: %+v", acc.ChatCompletion)
	}
}

// /v1/completions: chunks with choices[].text, ending with data: [DONE].
func TestEvents_CompletionsStreamEndsWithDone(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	r := streamRaw(t, s, a.Key, "/v1/completions", map[string]any{"model": modelChat, "prompt": "Hej"})
	if err := getSpec(t).CheckStreamTerminal("POST", "/v1/completions", r.Body); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(r.Body), `"text"`) {
		t.Errorf("no text chunks: %.300s", r.Body)
	}
}

// /v1/responses: named response.* events ending with response.completed (SDK and raw).
func TestEvents_ResponsesStreamEndsWithCompleted(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	for _, model := range []string{modelChat, modelTranslated} {
		r := streamRaw(t, s, a.Key, "/v1/responses", map[string]any{"model": model, "input": "Hej"})
		if err := getSpec(t).CheckStreamTerminal("POST", "/v1/responses", r.Body); err != nil {
			t.Errorf("%s: %v", model, err)
		}
		for _, ev := range openapi.ParseSSE(r.Body) {
			if !strings.HasPrefix(ev.Event, "response.") {
				t.Errorf("%s: event %q is not response.*", model, ev.Event)
			}
		}
	}
	stream := oa(t, s, a.Key).Responses.NewStreaming(ctx(t), responses.ResponseNewParams{
		Model: modelChat, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hej")},
	})
	last := ""
	for stream.Next() {
		last = stream.Current().Type
	}
	if err := stream.Err(); err != nil || last != "response.completed" {
		t.Fatalf("SDK stream: last %q, %v", last, err)
	}
}

// /v1/messages: message_start, content block events, message_delta, ending with message_stop.
func TestEvents_MessagesStreamEndsWithMessageStop(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	for _, model := range []string{modelChat, modelTranslated} {
		stream := av1(t, s, a.Key).Messages.NewStreaming(ctx(t), anthropic.MessageNewParams{
			Model: anthropic.Model(model), MaxTokens: 16,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hej"))},
		})
		var msg anthropic.Message
		var types []string
		for stream.Next() {
			ev := stream.Current()
			types = append(types, ev.Type)
			if err := msg.Accumulate(ev); err != nil {
				t.Fatalf("%s: accumulate: %v", model, err)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		seq := strings.Join(types, " ")
		if !strings.HasPrefix(seq, "message_start content_block_start") || !strings.Contains(seq, "message_delta") ||
			!strings.HasSuffix(seq, "message_stop") || msg.Content[0].Text == "" {
			t.Errorf("%s: events %s", model, seq)
		}
	}
	r := streamRaw(t, s, a.Key, "/v1/messages", map[string]any{"model": modelChat, "max_tokens": 8,
		"messages": []any{map[string]any{"role": "user", "content": "Hej"}}})
	if err := getSpec(t).CheckStreamTerminal("POST", "/v1/messages", r.Body); err != nil {
		t.Fatal(err)
	}
}

// Rules 1 and 2: a stream that breaks after it started keeps its 200 and lacks the terminal
// event (incomplete output).
func TestEvents_BrokenStreamKeeps200WithoutTerminal(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	r := streamRaw(t, s, a.Key, "/v1/chat/completions", chatReq(modelChat, "sim", sim("fail_after_events", 3)))
	if err := getSpec(t).CheckStreamTerminal("POST", "/v1/chat/completions", r.Body); err == nil {
		t.Fatalf("a broken stream ends with its terminal event: %s", r.Body)
	}
	// The events the provider sent before it broke (at most 3), then one error event that
	// tells the client the stream did not complete (never [DONE]).
	evs := openapi.ParseSSE(r.Body)
	if n := len(evs); n < 2 || n > 4 {
		t.Fatalf("%d events relayed, want the provider's (1..3) and an error event", n)
	}
	if last := evs[len(evs)-1]; !strings.Contains(last.Data, `"error"`) || strings.Contains(string(r.Body), "[DONE]") {
		t.Errorf("the broken stream does not end with an error event: %s", r.Body)
	}
}

// Rule 3: a stream is not continued on another provider. The model's first route breaks
// streams after two events; its second route is healthy.
func TestEvents_StreamNotContinuedOnAnotherProvider(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	// The first route may be resting after an earlier failure (circuit breaking): ask
	// until the broken route serves a stream.
	var r Response
	poll.WaitEvery(10*time.Second, 250*time.Millisecond, func() bool {
		r = streamRaw(t, s, a.Key, "/v1/chat/completions", chatReq(modelBroken))
		if r.Header.Get("X-Service-Provider") == "sim-broken" {
			return true
		}
		if getSpec(t).CheckStreamTerminal("POST", "/v1/chat/completions", r.Body) != nil {
			t.Fatalf("a stream of the healthy route %q is incomplete", r.Header.Get("X-Service-Provider"))
		}
		return false
	})
	if p := r.Header.Get("X-Service-Provider"); p != "sim-broken" {
		t.Fatalf("the first route never served a stream (last %q)", p)
	}
	if err := getSpec(t).CheckStreamTerminal("POST", "/v1/chat/completions", r.Body); err == nil {
		t.Fatalf("the broken stream was completed elsewhere: %s", r.Body)
	}
	if strings.Count(string(r.Body), `"role":"assistant"`) > 1 {
		t.Errorf("a second provider's stream was spliced in: %s", r.Body)
	}
}

// Rule 3: closing the connection cancels the upstream request.
func TestEvents_ClientCloseCancelsUpstream(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	body := chatReq(modelChat, "stream", true, "sim", sim("tokens_per_second", 20, "output_tokens", 400))
	c, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(c, "POST", s.DataURL+"/v1/chat/completions", strings.NewReader(string(mustJSON(body))))
	req.Header.Set("Authorization", "Bearer "+a.Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 512)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	before := simStats(t, s)
	cancel()
	resp.Body.Close()
	s.waitFor(t, "the simulator to see the cancellation", func() bool { return simStats(t, s).Cancelled > before.Cancelled })
}

type simStatsT struct {
	Requests  int64 `json:"requests"`
	Cancelled int64 `json:"cancelled"`
	Streams   int64 `json:"streams"`
}

func simStats(t testing.TB, s *Stack) simStatsT {
	t.Helper()
	var st simStatsT
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(s.SimURL + "/sim/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}
