package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	anthropic1 "github.com/anthropics/anthropic-sdk-go"
	a1option "github.com/anthropics/anthropic-sdk-go/option"
	anthropic2 "github.com/anthropics/anthropic-sdk-go/v2"
	a2option "github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/usage"
)

// The official Anthropic SDKs, base address {base_url} without /v1, against the gateway in
// front of the simulator: the v1 SDK authenticates with x-api-key (anthropic-version
// 2023-06-01), the v2 SDK with a bearer token (anthropic-version 2026-10-21). Each runs on
// the model whose route speaks Messages-style natively and on the chat-only model served
// through translation.

const sdkOutTokens = 5

// checkMessageRecord checks the last record of a Messages-style call.
func checkMessageRecord(t *testing.T, g *protoGateway, n int, model string, translated, stream bool, in, out int64) {
	t.Helper()
	recs := g.waitRecords(t, n)
	rec := recs[len(recs)-1]
	if rec.Model != model || rec.Endpoint != "/v1/messages" || rec.Status != 200 || rec.Result != usage.ResultOK ||
		rec.Stream != stream || rec.Routing == nil || rec.Routing.Translated != translated || rec.KeyID == nil {
		t.Errorf("record %+v routing %+v", rec, rec.Routing)
	}
	if rec.PromptTokens != in || rec.CompletionTokens != out {
		t.Errorf("record tokens %d/%d, want %d/%d", rec.PromptTokens, rec.CompletionTokens, in, out)
	}
	if want := money.Price(in, out, pInOre, pOutOre); rec.PriceMicroSEK != want || want == 0 {
		t.Errorf("price %d, want %d", rec.PriceMicroSEK, want)
	}
}

func TestAnthropicSDKv1(t *testing.T) {
	g := startProtoGateway(t, simulator.Knobs{OutputTokens: sdkOutTokens})
	ctx := context.Background()
	client := anthropic1.NewClient(a1option.WithBaseURL(g.URL), a1option.WithAPIKey(g.Key), a1option.WithMaxRetries(0))
	weather := []anthropic1.ToolUnionParam{{OfTool: &anthropic1.ToolParam{
		Name:        "get_weather",
		InputSchema: anthropic1.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}},
	}}}
	n := 0
	for _, tc := range []struct {
		model      string
		translated bool
	}{{pmNative, false}, {pmTranslated, true}, {pmTransAlias, true}} {
		canonical := tc.model
		if tc.model == pmTransAlias {
			canonical = pmTranslated
		}
		t.Run(tc.model, func(t *testing.T) {
			params := anthropic1.MessageNewParams{
				Model: anthropic1.Model(tc.model), MaxTokens: 100,
				System:   []anthropic1.TextBlockParam{{Text: "be brief"}},
				Messages: []anthropic1.MessageParam{anthropic1.NewUserMessage(anthropic1.NewTextBlock("hello there"))},
			}
			msg, err := client.Messages.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			if len(msg.Content) != 1 || msg.Content[0].Text != simulator.GenerateText("hello there", sdkOutTokens) ||
				msg.StopReason != anthropic1.StopReasonEndTurn || msg.Usage.InputTokens != 4 || msg.Usage.OutputTokens != sdkOutTokens {
				t.Errorf("message %+v", msg)
			}
			if tc.translated && string(msg.Model) != tc.model {
				t.Errorf("translated answer names model %q, want the client's %q", msg.Model, tc.model)
			}
			n++
			checkMessageRecord(t, g, n, canonical, tc.translated, false, 4, sdkOutTokens)

			// Streamed text, accumulated by the SDK.
			stream := client.Messages.NewStreaming(ctx, params)
			acc := anthropic1.Message{}
			for stream.Next() {
				if err := acc.Accumulate(stream.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if len(acc.Content) != 1 || acc.Content[0].Text != simulator.GenerateText("hello there", sdkOutTokens) ||
				acc.StopReason != anthropic1.StopReasonEndTurn || acc.Usage.OutputTokens != sdkOutTokens {
				t.Errorf("accumulated %+v", acc)
			}
			n++
			checkMessageRecord(t, g, n, canonical, tc.translated, true, 4, sdkOutTokens)

			// Streamed tool call: the arguments arrive in fragments and must survive whole.
			params.Tools = weather
			params.Messages = []anthropic1.MessageParam{anthropic1.NewUserMessage(anthropic1.NewTextBlock("weather in Malmö?"))}
			tstream := client.Messages.NewStreaming(ctx, params)
			tacc := anthropic1.Message{}
			for tstream.Next() {
				if err := tacc.Accumulate(tstream.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := tstream.Err(); err != nil {
				t.Fatal(err)
			}
			if len(tacc.Content) != 1 || tacc.Content[0].Type != "tool_use" || tacc.Content[0].Name != "get_weather" ||
				tacc.StopReason != anthropic1.StopReasonToolUse || tacc.Usage.OutputTokens != 2 {
				t.Fatalf("accumulated tool call %+v", tacc)
			}
			var input map[string]string
			if err := json.Unmarshal(tacc.Content[0].Input, &input); err != nil || input["city"] != "Stockholm" {
				t.Errorf("tool input %s (%v)", tacc.Content[0].Input, err)
			}
			n++
			checkMessageRecord(t, g, n, canonical, tc.translated, true, 5, 2)
		})
	}

	// count_tokens: never served, never recorded.
	before := g.Meter.Count()
	ctParams := anthropic1.MessageCountTokensParams{Model: pmNative,
		Messages: []anthropic1.MessageParam{anthropic1.NewUserMessage(anthropic1.NewTextBlock("hello"))}}
	_, err := client.Messages.CountTokens(ctx, ctParams)
	checkSDKError1(t, err, 400, "invalid_request_error")
	ctParams.Model = "no-such-model"
	_, err = client.Messages.CountTokens(ctx, ctParams)
	checkSDKError1(t, err, 404, "not_found_error")
	ctParams.Model = pmHidden
	_, err = client.Messages.CountTokens(ctx, ctParams)
	checkSDKError1(t, err, 404, "not_found_error")
	broke := anthropic1.NewClient(a1option.WithBaseURL(g.URL), a1option.WithAPIKey(g.BrokeK), a1option.WithMaxRetries(0))
	ctParams.Model = pmNative
	_, err = broke.Messages.CountTokens(ctx, ctParams)
	checkSDKError1(t, err, 402, "insufficient_quota")
	if g.Meter.Count() != before {
		t.Errorf("count_tokens made %d records", g.Meter.Count()-before)
	}
}

func checkSDKError1(t *testing.T, err error, status int, typ string) {
	t.Helper()
	var ae *anthropic1.Error
	if !errors.As(err, &ae) {
		t.Fatalf("want an API error %d, got %v", status, err)
	}
	if ae.StatusCode != status {
		t.Errorf("status %d, want %d: %s", ae.StatusCode, status, ae.RawJSON())
	}
	var env struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(ae.RawJSON()), &env); err != nil || env.Type != "error" || env.Error.Type != typ || env.Error.Message == "" {
		t.Errorf("envelope %s, want type error / %s", ae.RawJSON(), typ)
	}
}

func TestAnthropicSDKv2Bearer(t *testing.T) {
	g := startProtoGateway(t, simulator.Knobs{OutputTokens: sdkOutTokens})
	ctx := context.Background()
	var sawAuth, sawVersion string
	client := anthropic2.NewClient(a2option.WithBaseURL(g.URL), a2option.WithAuthToken(g.Key), a2option.WithMaxRetries(0),
		a2option.WithMiddleware(func(r *http.Request, next a2option.MiddlewareNext) (*http.Response, error) {
			sawAuth, sawVersion = r.Header.Get("Authorization"), r.Header.Get("Anthropic-Version")
			return next(r)
		}))
	n := 0
	for _, tc := range []struct {
		model      string
		translated bool
	}{{pmNative, false}, {pmTranslated, true}} {
		t.Run(tc.model, func(t *testing.T) {
			params := anthropic2.MessageNewParams{
				Model: anthropic2.Model(tc.model), MaxTokens: 100,
				Messages: []anthropic2.MessageParam{anthropic2.NewUserMessage(anthropic2.NewTextBlock("hello there"))},
			}
			msg, err := client.Messages.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			if sawAuth != "Bearer "+g.Key || sawVersion == "" {
				t.Errorf("v2 SDK sent Authorization %q, anthropic-version %q", sawAuth, sawVersion)
			}
			if len(msg.Content) != 1 || msg.Content[0].Text != simulator.GenerateText("hello there", sdkOutTokens) ||
				msg.StopReason != anthropic2.StopReasonEndTurn || msg.Usage.OutputTokens != sdkOutTokens {
				t.Errorf("message %+v", msg)
			}
			n++
			checkMessageRecord(t, g, n, tc.model, tc.translated, false, 2, sdkOutTokens)

			stream := client.Messages.NewStreaming(ctx, params)
			acc := anthropic2.Message{}
			for stream.Next() {
				if err := acc.Accumulate(stream.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if len(acc.Content) != 1 || acc.Content[0].Text != simulator.GenerateText("hello there", sdkOutTokens) ||
				acc.StopReason != anthropic2.StopReasonEndTurn {
				t.Errorf("accumulated %+v", acc)
			}
			n++
			checkMessageRecord(t, g, n, tc.model, tc.translated, true, 2, sdkOutTokens)

			params.Tools = []anthropic2.ToolUnionParam{{OfTool: &anthropic2.ToolParam{
				Name: "get_weather",
				InputSchema: anthropic2.ToolInputSchemaParam{Properties: map[string]any{
					"city": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string", "enum": []string{"celsius"}}}},
			}}}
			params.Messages = []anthropic2.MessageParam{anthropic2.NewUserMessage(anthropic2.NewTextBlock("weather in Luleå?"))}
			tstream := client.Messages.NewStreaming(ctx, params)
			tacc := anthropic2.Message{}
			for tstream.Next() {
				if err := tacc.Accumulate(tstream.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := tstream.Err(); err != nil {
				t.Fatal(err)
			}
			if len(tacc.Content) != 1 || tacc.Content[0].Type != "tool_use" || tacc.StopReason != anthropic2.StopReasonToolUse {
				t.Fatalf("accumulated tool call %+v", tacc)
			}
			var input map[string]string
			if err := json.Unmarshal(tacc.Content[0].Input, &input); err != nil || input["city"] != "Stockholm" || input["unit"] != "celsius" {
				t.Errorf("tool input %s (%v)", tacc.Content[0].Input, err)
			}
			n++
		})
	}

	before := g.Meter.Count()
	ctParams := anthropic2.MessageCountTokensParams{Model: pmTranslated,
		Messages: []anthropic2.MessageParam{anthropic2.NewUserMessage(anthropic2.NewTextBlock("hello"))}}
	_, err := client.Messages.CountTokens(ctx, ctParams)
	checkSDKError2(t, err, 400, "invalid_request_error")
	ctParams.Model = "no-such-model"
	_, err = client.Messages.CountTokens(ctx, ctParams)
	checkSDKError2(t, err, 404, "not_found_error")
	broke := anthropic2.NewClient(a2option.WithBaseURL(g.URL), a2option.WithAuthToken(g.BrokeK), a2option.WithMaxRetries(0))
	ctParams.Model = pmTranslated
	_, err = broke.Messages.CountTokens(ctx, ctParams)
	checkSDKError2(t, err, 402, "insufficient_quota")
	// Messages themselves need a positive balance too.
	_, err = broke.Messages.New(ctx, anthropic2.MessageNewParams{Model: pmNative, MaxTokens: 10,
		Messages: []anthropic2.MessageParam{anthropic2.NewUserMessage(anthropic2.NewTextBlock("hi"))}})
	checkSDKError2(t, err, 402, "insufficient_quota")
	if g.Meter.Count() != before {
		t.Errorf("refusals made %d records", g.Meter.Count()-before)
	}
}

func checkSDKError2(t *testing.T, err error, status int, typ string) {
	t.Helper()
	var ae *anthropic2.Error
	if !errors.As(err, &ae) {
		t.Fatalf("want an API error %d, got %v", status, err)
	}
	if ae.StatusCode != status {
		t.Errorf("status %d, want %d: %s", ae.StatusCode, status, ae.RawJSON())
	}
	var env struct {
		Type  string `json:"type"`
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(ae.RawJSON()), &env); err != nil || env.Type != "error" || env.Error.Type != typ {
		t.Errorf("envelope %s, want type error / %s", ae.RawJSON(), typ)
	}
}
