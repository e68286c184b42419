package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	anthropic1 "github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/internal/simulator"
)

// The conformance tests of the servers' dialects: every dialect × protocol (chat passed
// through, Messages-style and Responses-style translated) × stream and not, for every
// scenario of the simulator's dialects, through the official SDKs; each checks what the
// client sees, the record's result and the exact charge.

func (g *dialectGateway) openaiClient() openai.Client {
	return openai.NewClient(option.WithBaseURL(g.URL+"/v1"), option.WithAPIKey(g.Key), option.WithMaxRetries(0),
		option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			g.capture(req)
			return next(req)
		}))
}

// checkAPIError checks an SDK error: the status and a message naming the server's words.
func checkAPIError(t *testing.T, err error, sc string) {
	t.Helper()
	if err != nil {
		// The SDKs' errors name the status; the body holds the message.
		var oe *openai.Error
		var ae *anthropic1.Error
		switch {
		case errors.As(err, &oe):
			err = fmt.Errorf("%d %s", oe.StatusCode, oe.RawJSON())
		case errors.As(err, &ae):
			err = fmt.Errorf("%d %s", ae.StatusCode, ae.RawJSON())
		}
	}
	switch {
	case err == nil:
		t.Fatal("no error")
	case sc == simulator.ScenarioOverflow && (!strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "the provider refused the request: ")):
		t.Errorf("overflow error %v", err)
	case sc == simulator.ScenarioError && !strings.Contains(err.Error(), simulator.DialectErrorMessage):
		t.Errorf("error %v", err)
	case sc == simulator.ScenarioCut && !strings.Contains(err.Error(), "ended before its last event"):
		t.Errorf("cut error %v", err)
	}
}

func failing(sc string) bool {
	return sc == simulator.ScenarioError || sc == simulator.ScenarioCut || sc == simulator.ScenarioOverflow
}

func TestDialectsChat(t *testing.T) {
	g := startDialectGateway(t)
	client := g.openaiClient()
	ctx := context.Background()
	n := 0
	for _, d := range simulator.Dialects {
		for _, sc := range dialectScenarios {
			prompt := "hej scenario:" + sc
			params := openai.ChatCompletionNewParams{Model: dialectModel(d),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
				Stop:     openai.ChatCompletionNewParamsStopUnion{OfString: openai.String(simulator.DialectDefaultStop)}}
			text, reasoning := simulator.DialectText(prompt), simulator.DialectReasoning(prompt)
			if sc != simulator.ScenarioCut {
				t.Run(d+"/"+sc, func(t *testing.T) {
					resp, err := client.Chat.Completions.New(ctx, params)
					n++
					g.checkRecord(t, n, "/v1/chat/completions", wantCharge(d, sc, false))
					if failing(sc) {
						checkAPIError(t, err, sc)
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					msg := resp.Choices[0].Message
					checkChatMessage(t, d, sc, msg.RawJSON(), text, reasoning)
					checkFinish(t, sc, resp.Choices[0].FinishReason)
					if sc == simulator.ScenarioCached && resp.Usage.PromptTokensDetails.CachedTokens != simulator.DialectCached {
						t.Errorf("usage %s", resp.Usage.RawJSON())
					}
				})
			}
			t.Run(d+"/"+sc+"/stream", func(t *testing.T) {
				sp := params
				if sc == simulator.ScenarioCached {
					sp.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
				}
				stream := client.Chat.Completions.NewStreaming(ctx, sp)
				var acc openai.ChatCompletionAccumulator
				var think, usageChunks []string
				for stream.Next() {
					ch := stream.Current()
					acc.AddChunk(ch)
					raw := ch.RawJSON()
					if u := gjson.Get(raw, "usage"); u.Exists() && u.Type != gjson.Null {
						usageChunks = append(usageChunks, raw)
					}
					for _, f := range []string{"reasoning", "reasoning_content"} {
						think = append(think, f+"="+gjson.Get(raw, "choices.0.delta."+f).Str)
					}
				}
				n++
				g.checkRecord(t, n, "/v1/chat/completions", wantCharge(d, sc, true))
				if failing(sc) {
					checkAPIError(t, stream.Err(), sc)
					return
				}
				if err := stream.Err(); err != nil {
					t.Fatal(err)
				}
				// Usage once, at the end, and only when asked (also where the node asked
				// the server for running usage).
				switch {
				case sc == simulator.ScenarioCached && (len(usageChunks) != 1 ||
					gjson.Get(usageChunks[0], "usage.prompt_tokens_details.cached_tokens").Int() != simulator.DialectCached):
					t.Errorf("usage chunks %v", usageChunks)
				case sc != simulator.ScenarioCached && len(usageChunks) != 0:
					t.Errorf("usage not asked for, but in %v", usageChunks)
				}
				msg := acc.Choices[0].Message
				checkFinish(t, sc, acc.Choices[0].FinishReason)
				if sc == simulator.ScenarioTool {
					if len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Name != simulator.DialectToolName ||
						msg.ToolCalls[0].Function.Arguments != simulator.DialectToolArgs {
						t.Errorf("tool calls %+v", msg.ToolCalls)
					}
					return
				}
				if msg.Content != text {
					t.Errorf("content %q, want %q", msg.Content, text)
				}
				if sc == simulator.ScenarioReasoning && hasReasoning(d) {
					joined := strings.Join(think, "|")
					// Both names: clients look for either.
					for _, f := range []string{"reasoning", "reasoning_content"} {
						var got strings.Builder
						for _, p := range think {
							if v, ok := strings.CutPrefix(p, f+"="); ok {
								got.WriteString(v)
							}
						}
						if got.String() != reasoning {
							t.Errorf("%s streamed %q, want %q (%s)", f, got.String(), reasoning, joined)
						}
					}
				}
			})
		}
	}
}

// checkFinish checks a chat answer's finish_reason: the protocol's own values (TGI's
// stop_sequence and eos_token read stop).
func checkFinish(t *testing.T, sc, got string) {
	t.Helper()
	want := "stop"
	if sc == simulator.ScenarioTool {
		want = "tool_calls"
	}
	if got != want {
		t.Errorf("finish_reason %q, want %q", got, want)
	}
}

// checkChatMessage checks a chat answer's message.
func checkChatMessage(t *testing.T, d, sc, raw, text, reasoning string) {
	t.Helper()
	if sc == simulator.ScenarioTool {
		tc := gjson.Get(raw, "tool_calls.0.function")
		if tc.Get("name").Str != simulator.DialectToolName || tc.Get("arguments").Str != simulator.DialectToolArgs {
			t.Errorf("message %s", raw)
		}
		return
	}
	if gjson.Get(raw, "content").Str != text {
		t.Errorf("content %s, want %q", raw, text)
	}
	if sc == simulator.ScenarioReasoning && hasReasoning(d) {
		if gjson.Get(raw, "reasoning").Str != reasoning || gjson.Get(raw, "reasoning_content").Str != reasoning {
			t.Errorf("reasoning under both names wanted: %s", raw)
		}
	}
}

// TestRunningUsageAskedByClient: a chat client that asks for running usage itself
// (continuous_usage_stats) keeps it in every chunk; one that asks only include_usage gets
// usage once, in the last chunk (TestDialectsChat).
func TestRunningUsageAskedByClient(t *testing.T) {
	g := startDialectGateway(t)
	client := g.openaiClient()
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         dialectModel(simulator.DialectVLLM),
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hej")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}, option.WithJSONSet("stream_options.continuous_usage_stats", true))
	chunks, withUsage := 0, 0
	for stream.Next() {
		chunks++
		if gjson.Get(stream.Current().RawJSON(), "usage.prompt_tokens").Exists() {
			withUsage++
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if chunks < 3 || withUsage != chunks {
		t.Errorf("%d of %d chunks carry usage", withUsage, chunks)
	}
	g.checkRecord(t, 1, "/v1/chat/completions", charge{result: "ok", status: 200, in: 1, out: simulator.DialectTextWords})
}
