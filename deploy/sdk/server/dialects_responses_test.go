package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/sekgate/gateway/internal/respcheck"
	"github.com/sekgate/gateway/internal/simulator"
)

func TestDialectsResponses(t *testing.T) {
	g := startDialectGateway(t)
	client := g.openaiClient()
	ctx := context.Background()
	n := 0
	for _, d := range simulator.Dialects {
		for _, sc := range dialectScenarios {
			prompt := "hej scenario:" + sc
			params := responses.ResponseNewParams{Model: dialectModel(d),
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)}}
			if sc != simulator.ScenarioCut {
				t.Run(d+"/"+sc, func(t *testing.T) {
					resp, err := client.Responses.New(ctx, params)
					n++
					g.checkRecord(t, n, "/v1/responses", wantCharge(d, sc, false))
					if failing(sc) {
						checkAPIError(t, err, sc)
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					checkResponse(t, d, sc, prompt, resp, false)
				})
			}
			t.Run(d+"/"+sc+"/stream", func(t *testing.T) {
				stream := client.Responses.NewStreaming(ctx, params)
				var (
					final          *responses.Response
					failed         string
					thought, text  strings.Builder
					args           strings.Builder
					first, lastEvt string
					order          respcheck.Stream // the SDK stream helpers' event-order rules
					orderErr       error
				)
				for stream.Next() {
					ev := stream.Current()
					if err := order.Add(ev.Type, []byte(ev.RawJSON())); err != nil && orderErr == nil {
						orderErr = err
					}
					if first == "" {
						first = ev.Type
					}
					lastEvt = ev.Type
					switch ev.Type {
					case "response.reasoning_text.delta":
						thought.WriteString(ev.Delta)
					case "response.output_text.delta":
						text.WriteString(ev.Delta)
					case "response.function_call_arguments.delta":
						args.WriteString(ev.Delta)
					case "response.completed":
						r := ev.AsResponseCompleted().Response
						final = &r
					case "response.failed":
						failed = ev.AsResponseFailed().Response.Error.Message
					}
				}
				n++
				g.checkRecord(t, n, "/v1/responses", wantCharge(d, sc, true))
				if orderErr != nil {
					t.Errorf("the SDK stream helper would throw: %v", orderErr)
				}
				switch {
				case sc == simulator.ScenarioOverflow:
					checkAPIError(t, stream.Err(), sc)
					return
				case sc == simulator.ScenarioError || sc == simulator.ScenarioCut:
					// The stream ends with response.failed carrying the server's message.
					if stream.Err() != nil || lastEvt != "response.failed" {
						t.Fatalf("err %v, last event %s", stream.Err(), lastEvt)
					}
					checkAPIError(t, errorString(failed), sc)
					return
				}
				if err := stream.Err(); err != nil {
					t.Fatal(err)
				}
				if first != "response.created" || final == nil {
					t.Fatalf("first event %s, last %s", first, lastEvt)
				}
				checkResponse(t, d, sc, prompt, final, true)
				switch sc {
				case simulator.ScenarioTool:
					if args.String() != simulator.DialectToolArgs {
						t.Errorf("streamed arguments %q", args.String())
					}
				case simulator.ScenarioReasoning:
					if hasReasoning(d) && thought.String() != simulator.DialectReasoning(prompt) {
						t.Errorf("streamed reasoning %q", thought.String())
					}
					fallthrough
				default:
					if text.String() != simulator.DialectText(prompt) {
						t.Errorf("streamed text %q", text.String())
					}
				}
			})
		}
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

// checkResponse checks a Responses-style answer (whole, or the streamed response.completed).
func checkResponse(t *testing.T, d, sc, prompt string, r *responses.Response, stream bool) {
	t.Helper()
	want := wantCharge(d, sc, false)
	if r.Status != responses.ResponseStatusCompleted || r.Usage.InputTokens != want.in || r.Usage.OutputTokens != want.out {
		t.Errorf("status %s usage %s, want %d/%d", r.Status, r.Usage.RawJSON(), want.in, want.out)
	}
	var kinds []string
	for _, it := range r.Output {
		kinds = append(kinds, it.Type)
	}
	switch {
	case sc == simulator.ScenarioTool:
		if len(r.Output) != 1 || r.Output[0].Type != "function_call" {
			t.Fatalf("output %v: %s", kinds, r.RawJSON())
		}
		fc := r.Output[0].AsFunctionCall()
		if fc.Name != simulator.DialectToolName || fc.Arguments != simulator.DialectToolArgs || fc.CallID == "" {
			t.Errorf("function call %s", fc.RawJSON())
		}
		return
	case sc == simulator.ScenarioReasoning && hasReasoning(d):
		if len(r.Output) != 2 || r.Output[0].Type != "reasoning" {
			t.Fatalf("output %v: %s", kinds, r.RawJSON())
		}
		rs := r.Output[0].AsReasoning()
		if len(rs.Content) != 1 || rs.Content[0].Text != simulator.DialectReasoning(prompt) {
			t.Errorf("reasoning item %s", rs.RawJSON())
		}
		// Reported by the server, else (streams) counted from its reasoning events.
		if wantR := map[bool]int64{true: simulator.DialectReasoningWords}[stream]; r.Usage.OutputTokensDetails.ReasoningTokens != wantR {
			t.Errorf("reasoning_tokens %d, want %d", r.Usage.OutputTokensDetails.ReasoningTokens, wantR)
		}
	case len(r.Output) != 1:
		t.Fatalf("output %v: %s", kinds, r.RawJSON())
	}
	if r.OutputText() != simulator.DialectText(prompt) {
		t.Errorf("text %q", r.OutputText())
	}
	if sc == simulator.ScenarioCached && r.Usage.InputTokensDetails.CachedTokens != simulator.DialectCached {
		t.Errorf("usage %s", r.Usage.RawJSON())
	}
}

// TestNativeResponsesCut: a Responses-style stream from a route that speaks it natively,
// cut before its terminal event, ends with response.failed for the same response.
func TestNativeResponsesCut(t *testing.T) {
	g := startProtoGateway(t, simulator.Knobs{FailAfterEvents: 4})
	client := openai.NewClient(option.WithBaseURL(g.URL+"/v1"), option.WithAPIKey(g.Key), option.WithMaxRetries(0))
	stream := client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{Model: pmNative,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hej")}})
	var id, last string
	var failed responses.Response
	seq, lastSeq := int64(-1), int64(-1)
	for stream.Next() {
		ev := stream.Current()
		last, lastSeq = ev.Type, seq
		seq = ev.SequenceNumber
		switch ev.Type {
		case "response.created":
			id = ev.Response.ID
		case "response.failed":
			failed = ev.AsResponseFailed().Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if last != "response.failed" || failed.ID != id || id == "" || failed.Status != responses.ResponseStatusFailed ||
		!strings.Contains(failed.Error.Message, "ended before its last event") || seq != lastSeq+1 {
		t.Errorf("last %s seq %d after %d, failed %s", last, seq, lastSeq, failed.RawJSON())
	}
	recs := g.waitRecords(t, 1)
	if recs[0].Result != "incomplete" {
		t.Errorf("record %+v", recs[0])
	}
}
