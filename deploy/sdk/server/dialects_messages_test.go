package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	anthropic1 "github.com/anthropics/anthropic-sdk-go"
	a1option "github.com/anthropics/anthropic-sdk-go/option"

	"github.com/sekgate/gateway/internal/simulator"
)

func TestDialectsMessages(t *testing.T) {
	g := startDialectGateway(t)
	client := anthropic1.NewClient(a1option.WithBaseURL(g.URL), a1option.WithAPIKey(g.Key), a1option.WithMaxRetries(0),
		a1option.WithMiddleware(func(req *http.Request, next a1option.MiddlewareNext) (*http.Response, error) {
			g.capture(req)
			return next(req)
		}))
	ctx := context.Background()
	n := 0
	for _, d := range simulator.Dialects {
		for _, sc := range dialectScenarios {
			prompt := "hej scenario:" + sc
			params := anthropic1.MessageNewParams{Model: anthropic1.Model(dialectModel(d)), MaxTokens: 2000,
				StopSequences: []string{simulator.DialectDefaultStop},
				Messages:      []anthropic1.MessageParam{anthropic1.NewUserMessage(anthropic1.NewTextBlock(prompt))}}
			if sc == simulator.ScenarioReasoning {
				params.Thinking = anthropic1.ThinkingConfigParamOfEnabled(1024)
			}
			if sc != simulator.ScenarioCut {
				t.Run(d+"/"+sc, func(t *testing.T) {
					msg, err := client.Messages.New(ctx, params)
					n++
					g.checkRecord(t, n, "/v1/messages", wantCharge(d, sc, false))
					if failing(sc) {
						checkAPIError(t, err, sc)
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					checkMessage(t, d, sc, prompt, msg)
				})
			}
			t.Run(d+"/"+sc+"/stream", func(t *testing.T) {
				stream := client.Messages.NewStreaming(ctx, params)
				var acc anthropic1.Message
				for stream.Next() {
					if err := acc.Accumulate(stream.Current()); err != nil {
						t.Fatal(err)
					}
				}
				n++
				g.checkRecord(t, n, "/v1/messages", wantCharge(d, sc, true))
				if failing(sc) {
					checkAPIError(t, stream.Err(), sc)
					return
				}
				if err := stream.Err(); err != nil {
					t.Fatal(err)
				}
				checkMessage(t, d, sc, prompt, &acc)
			})
		}
	}
}

// checkMessage checks a Messages-style answer (whole or accumulated from its stream).
func checkMessage(t *testing.T, d, sc, prompt string, msg *anthropic1.Message) {
	t.Helper()
	var kinds []string
	for _, b := range msg.Content {
		kinds = append(kinds, b.Type)
	}
	want := charge{in: 2, out: wantCharge(d, sc, false).out}
	var cached int64
	if sc == simulator.ScenarioCached {
		// Messages-style usage counts cache reads beside input_tokens.
		want.in, cached = 2-simulator.DialectCached, simulator.DialectCached
	}
	if msg.Usage.InputTokens != want.in || msg.Usage.OutputTokens != want.out || msg.Usage.CacheReadInputTokens != cached {
		t.Errorf("usage %s, want %d/%d cache read %d", msg.Usage.RawJSON(), want.in, want.out, cached)
	}
	switch {
	case sc == simulator.ScenarioTool:
		if len(msg.Content) != 1 || msg.Content[0].Type != "tool_use" || msg.Content[0].Name != simulator.DialectToolName ||
			msg.StopReason != anthropic1.StopReasonToolUse {
			t.Fatalf("content %v stop %s: %s", kinds, msg.StopReason, msg.RawJSON())
		}
		var in, wantIn map[string]any
		_ = json.Unmarshal(msg.Content[0].Input, &in)
		_ = json.Unmarshal([]byte(simulator.DialectToolArgs), &wantIn)
		if in["city"] != wantIn["city"] || len(in) != 1 {
			t.Errorf("tool input %s", msg.Content[0].Input)
		}
		return
	case sc == simulator.ScenarioReasoning && hasReasoning(d):
		if len(msg.Content) != 2 || msg.Content[0].Type != "thinking" || msg.Content[0].Thinking != simulator.DialectReasoning(prompt) ||
			msg.Content[0].Signature == "" {
			t.Fatalf("content %v: %s", kinds, msg.RawJSON())
		}
	case len(msg.Content) != 1:
		t.Fatalf("content %v: %s", kinds, msg.RawJSON())
	}
	text := msg.Content[len(msg.Content)-1]
	if text.Type != "text" || text.Text != simulator.DialectText(prompt) {
		t.Errorf("text block %s", text.RawJSON())
	}
	wantStop, wantSeq := anthropic1.StopReasonEndTurn, ""
	if sc == simulator.ScenarioStop && namesStop(d) {
		wantStop, wantSeq = anthropic1.StopReasonStopSequence, simulator.DialectDefaultStop
	}
	if msg.StopReason != wantStop || msg.StopSequence != wantSeq {
		t.Errorf("stop %s %q, want %s %q", msg.StopReason, msg.StopSequence, wantStop, wantSeq)
	}
}
