package server_test

import (
	"context"
	"errors"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/sekgate/gateway/internal/respcheck"
	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/usage"
)

// openai-go's Responses calls (base address {base_url}/v1) against the gateway in front of
// the simulator, on the natively speaking route and through chat completions translation.

func checkResponsesRecord(t *testing.T, g *protoGateway, n int, model string, translated, stream bool, in, out int64) {
	t.Helper()
	recs := g.waitRecords(t, n)
	rec := recs[len(recs)-1]
	if rec.Model != model || rec.Endpoint != "/v1/responses" || rec.Status != 200 || rec.Result != usage.ResultOK ||
		rec.Stream != stream || rec.Routing == nil || rec.Routing.Translated != translated || len(rec.Routing.Attempts) != 1 {
		t.Errorf("record %+v routing %+v", rec, rec.Routing)
	}
	if rec.PromptTokens != in || rec.CompletionTokens != out || rec.PriceMicroSEK != money.Price(in, out, pInOre, pOutOre) {
		t.Errorf("record tokens %d/%d price %d, want %d/%d", rec.PromptTokens, rec.CompletionTokens, rec.PriceMicroSEK, in, out)
	}
}

func TestOpenAIResponsesSDK(t *testing.T) {
	g := startProtoGateway(t, simulator.Knobs{OutputTokens: sdkOutTokens})
	ctx := context.Background()
	client := openai.NewClient(option.WithBaseURL(g.URL+"/v1"), option.WithAPIKey(g.Key), option.WithMaxRetries(0))
	tools := []responses.ToolUnionParam{responses.ToolParamOfFunction("get_weather", map[string]any{
		"type": "object", "properties": map[string]any{"location": map[string]any{"type": "string"}},
	}, false)}
	n := 0
	for _, tc := range []struct {
		model      string
		translated bool
	}{{pmNative, false}, {pmTranslated, true}} {
		t.Run(tc.model, func(t *testing.T) {
			params := responses.ResponseNewParams{
				Model:        tc.model,
				Instructions: openai.String("be brief"),
				Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("hej")},
			}
			resp, err := client.Responses.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			want := simulator.GenerateText("hej", sdkOutTokens)
			if resp.OutputText() != want || resp.Status != responses.ResponseStatusCompleted ||
				resp.Usage.InputTokens != 3 || resp.Usage.OutputTokens != sdkOutTokens || resp.Usage.TotalTokens != 3+sdkOutTokens {
				t.Errorf("response %q status %s usage %+v", resp.OutputText(), resp.Status, resp.Usage)
			}
			n++
			checkResponsesRecord(t, g, n, tc.model, tc.translated, false, 3, sdkOutTokens)

			// Streamed text.
			stream := client.Responses.NewStreaming(ctx, params)
			var text string
			var final responses.Response
			var events []string
			var order respcheck.Stream // the SDK stream helpers' event-order rules
			for stream.Next() {
				ev := stream.Current()
				events = append(events, ev.Type)
				if err := order.Add(ev.Type, []byte(ev.RawJSON())); err != nil {
					t.Fatalf("the SDK stream helper would throw: %v", err)
				}
				switch ev.Type {
				case "response.output_text.delta":
					text += ev.Delta
				case "response.completed":
					final = ev.AsResponseCompleted().Response
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if text != want || final.OutputText() != want || final.Usage.OutputTokens != sdkOutTokens || final.Usage.InputTokens != 3 {
				t.Errorf("streamed %q final %q usage %+v", text, final.OutputText(), final.Usage)
			}
			if len(events) < 3 || events[0] != "response.created" || events[len(events)-1] != "response.completed" {
				t.Errorf("event sequence %v", events)
			}
			n++
			checkResponsesRecord(t, g, n, tc.model, tc.translated, true, 3, sdkOutTokens)

			// Function tool call, whole and streamed.
			params.Tools = tools
			params.Input = responses.ResponseNewParamsInputUnion{OfString: openai.String("weather in Kiruna?")}
			resp, err = client.Responses.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			var call responses.ResponseFunctionToolCall
			for _, it := range resp.Output {
				if it.Type == "function_call" {
					call = it.AsFunctionCall()
				}
			}
			if call.Name != "get_weather" || call.Arguments != `{"location": "Stockholm"}` || call.CallID == "" {
				t.Errorf("function call %+v in %s", call, resp.RawJSON())
			}
			n++
			checkResponsesRecord(t, g, n, tc.model, tc.translated, false, 5, 2)

			tstream := client.Responses.NewStreaming(ctx, params)
			var args, doneArgs string
			var tfinal responses.Response
			var torder respcheck.Stream
			for tstream.Next() {
				ev := tstream.Current()
				if err := torder.Add(ev.Type, []byte(ev.RawJSON())); err != nil {
					t.Fatalf("the SDK stream helper would throw: %v", err)
				}
				switch ev.Type {
				case "response.function_call_arguments.delta":
					args += ev.Delta
				case "response.function_call_arguments.done":
					doneArgs = ev.Arguments
				case "response.completed":
					tfinal = ev.AsResponseCompleted().Response
				}
			}
			if err := tstream.Err(); err != nil {
				t.Fatal(err)
			}
			if args != `{"location": "Stockholm"}` || doneArgs != args {
				t.Errorf("streamed arguments %q, done %q", args, doneArgs)
			}
			var fcall responses.ResponseFunctionToolCall
			for _, it := range tfinal.Output {
				if it.Type == "function_call" {
					fcall = it.AsFunctionCall()
				}
			}
			if fcall.Name != "get_weather" || fcall.Arguments != args || tfinal.Usage.OutputTokens != 2 {
				t.Errorf("final function call %+v usage %+v", fcall, tfinal.Usage)
			}
			n++
			checkResponsesRecord(t, g, n, tc.model, tc.translated, true, 5, 2)
		})
	}

	// Stateless: stored responses and store=true are refused, nothing forwarded.
	before := g.Meter.Count()
	_, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: pmTranslated, Store: openai.Bool(true),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hej")}})
	checkOpenAIError(t, err, 400, "store")
	_, err = client.Responses.Get(ctx, "resp_123", responses.ResponseGetParams{})
	checkOpenAIError(t, err, 501, "")
	_, err = client.Responses.New(ctx, responses.ResponseNewParams{Model: pmChatOnly,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hej")}})
	checkOpenAIError(t, err, 400, "model")
	if g.Meter.Count() != before {
		t.Errorf("refusals made %d records", g.Meter.Count()-before)
	}
}

func checkOpenAIError(t *testing.T, err error, status int, param string) {
	t.Helper()
	var ae *openai.Error
	if !errors.As(err, &ae) {
		t.Fatalf("want an API error %d, got %v", status, err)
	}
	if ae.StatusCode != status || ae.Message == "" || ae.Param != param {
		t.Errorf("error %d param %q, want %d param %q: %s", ae.StatusCode, ae.Param, status, param, ae.RawJSON())
	}
}
