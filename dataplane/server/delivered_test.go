package server

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/dataplane/tokens"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

// The tests of this file play servers that deliver more output than they report, in every
// shape the protocols have, and hold the gateway to its contract (docs/limits.md): the
// client never receives more output than the record charges, counted by the documented
// estimate (tokens.OutputBytesPerToken bytes per token), and never more than the request's
// bound.

// word is the hostile servers' output: every one of its occurrences in what the client
// receives is delivered text ("lorem" and the space after it).
const word = "lorem "

// words is n words.
func words(n int) string { return strings.Repeat(word, n) }

// namedEvent is one event of a named-event protocol.
func namedEvent(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }

// chatData is a chat chunk whose choices are choices.
func chatData(choices string) string {
	return `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[` + choices + `]}` + "\n\n"
}

const (
	msgStart = `{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"m","content":[],"usage":{"input_tokens":3,"output_tokens":1}}}`
	msgStop  = `{"type":"message_stop"}`
	respHead = `{"type":"response.created","response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}}`
)

// hostileCase is a server's stream (or answer) and the request that gets it.
type hostileCase struct {
	name   string
	path   string // the client's endpoint
	native bool   // the route serves path itself (else: through chat completions)
	bound  int    // the request's output limit
	stream bool
	args   bool   // the words are tool arguments: counted without spaces (tokens.ArgBytes)
	body   string // what the server answers
}

func hostileCases() []hostileCase {
	var dupContent, tenWordChunks, oneWordChunks, blockStarts, doneOnly, unknownEvents, deltasNoUsage strings.Builder
	for range 60 {
		dupContent.WriteString(chatData(`{"index":0,"delta":{"content":"","content":"` + words(10) + `"}}`))
		tenWordChunks.WriteString(chatData(`{"index":0,"text":"` + words(10) + `"}`))
	}
	dupContent.WriteString("data: [DONE]\n\n")
	tenWordChunks.WriteString("data: [DONE]\n\n")
	for range 100 {
		oneWordChunks.WriteString(chatData(`{"index":0,"delta":{"content":"` + word + `"}}`))
	}
	oneWordChunks.WriteString(`data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}` + "\n\ndata: [DONE]\n\n")
	blockStarts.WriteString(namedEvent("message_start", msgStart))
	unknownEvents.WriteString(namedEvent("message_start", msgStart))
	deltasNoUsage.WriteString(namedEvent("message_start", msgStart))
	for i := range 50 {
		blockStarts.WriteString(namedEvent("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":"%s"}}`, i, words(40))))
		blockStarts.WriteString(namedEvent("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i)))
		unknownEvents.WriteString(namedEvent("text_burst", `{"type":"text_burst","text":"`+words(40)+`"}`))
		deltasNoUsage.WriteString(namedEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+word+`"}}`))
	}
	for _, b := range []*strings.Builder{&blockStarts, &unknownEvents, &deltasNoUsage} {
		b.WriteString(namedEvent("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`) + namedEvent("message_stop", msgStop))
	}
	doneOnly.WriteString(namedEvent("response.created", respHead))
	for i := range 50 {
		doneOnly.WriteString(namedEvent("response.output_text.done", fmt.Sprintf(`{"type":"response.output_text.done","output_index":%d,"content_index":0,"text":"%s"}`, i, words(40))))
	}
	doneOnly.WriteString(namedEvent("response.completed", `{"type":"response.completed","response":{"id":"resp_1","object":"response","status":"completed","output":[]}}`))
	var manyTools strings.Builder
	for i := range 50 {
		if i > 0 {
			manyTools.WriteByte(',')
		}
		fmt.Fprintf(&manyTools, `{"index":%d,"id":"c%d","type":"function","function":{"name":"f","arguments":"%s"}}`, i, i, words(100))
	}
	tools := chatData(`{"index":0,"delta":{"tool_calls":[`+manyTools.String()+`]}}`) + "data: [DONE]\n\n"
	whole := `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"` + words(3000) + `"},"finish_reason":"stop"}]}`

	chat, compl, msgs, resp := snapshot.EndpointChat, snapshot.EndpointCompletions, snapshot.EndpointMessages, snapshot.EndpointResponses
	return []hostileCase{
		{"chat duplicate content", chat, true, 100, true, false, dupContent.String()},
		{"messages through chat, duplicate content", msgs, false, 100, true, false, dupContent.String()},
		{"responses through chat, duplicate content", resp, false, 100, true, false, dupContent.String()},
		{"completions ten-word chunks", compl, true, 50, true, false, tenWordChunks.String()},
		{"chat one-word chunks reporting 1 token", chat, true, 200, true, false, oneWordChunks.String()},
		{"chat 50 tool calls of 100 words", chat, true, 8000, true, true, tools},
		{"chat 50 tool calls past the bound", chat, true, 5, true, true, tools},
		{"messages text in block starts", msgs, true, 100, true, false, blockStarts.String()},
		{"messages text in unknown events", msgs, true, 100, true, false, unknownEvents.String()},
		{"messages 50 deltas without usage", msgs, true, 100, true, false, deltasNoUsage.String()},
		{"responses text only in .done", resp, true, 100, true, false, doneOnly.String()},
		{"chat whole answer without usage", chat, true, 4000, false, false, whole},
		{"chat whole answer past the bound", chat, true, 5, false, false, whole},
	}
}

// TestDeliveredOutputIsCharged: for every hostile shape, the words the client received are
// charged (at OutputBytesPerToken bytes per token) and within the request's bound.
func TestDeliveredOutputIsCharged(t *testing.T) {
	for _, c := range hostileCases() {
		t.Run(c.name, func(t *testing.T) {
			up := hostile(t, func(w http.ResponseWriter, _ *http.Request) {
				if c.stream {
					w.Header().Set("Content-Type", "text/event-stream")
				} else {
					w.Header().Set("Content-Type", "application/json")
				}
				io.WriteString(w, c.body)
			})
			rt := chatRoute("rt-h", "h", up, "SE", 1, 1)
			if c.native {
				rt.Protocols = append(rt.Protocols, c.path)
			} else {
				rt.Translate = true
			}
			g := startSimGateway(t, []snapshot.Route{rt})
			r := g.postPath(t, c.path, hostileRequest(c))
			per := int64(len(word))
			if c.args {
				per = int64(len(strings.TrimSpace(word)))
			}
			got := int64(strings.Count(r.Body, "lorem")) * per
			delivered := got / tokens.OutputBytesPerToken
			rec := g.record(t, 1)
			if rec.CompletionTokens < delivered || rec.CompletionTokens > int64(c.bound) || delivered > int64(c.bound) {
				t.Fatalf("delivered %d bytes (%d tokens), charged %d output tokens, bound %d: %d %.300q",
					got, delivered, rec.CompletionTokens, c.bound, r.Status, r.Body)
			}
			if rec.CompletionTokens > 0 && rec.Result != usage.ResultOK && rec.Result != usage.ResultUpstreamError &&
				rec.Result != usage.ResultIncomplete {
				t.Errorf("record result %s", rec.Result)
			}
			t.Logf("%d: delivered %d tokens, charged %d (%s)", r.Status, delivered, rec.CompletionTokens, rec.Result)
		})
	}
}

// TestUnderreportedOutputIsFlagged: a server that reports 1 output token for 100 words
// delivered is charged the delivered estimate, and the record says so.
func TestUnderreportedOutputIsFlagged(t *testing.T) {
	var b strings.Builder
	for range 100 {
		b.WriteString(chatData(`{"index":0,"delta":{"content":"` + word + `"}}`))
	}
	b.WriteString(`data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}` + "\n\ndata: [DONE]\n\n")
	up := streamUpstream(t, func(w io.Writer, _ func(), _ *http.Request) { io.WriteString(w, b.String()) })
	g := startSimGateway(t, []snapshot.Route{chatRoute("rt-h", "h", up, "SE", 1, 1)})
	r := g.postPath(t, snapshot.EndpointChat, `{"model":"`+fixture.ModelChat+`","max_tokens":500,"stream":true,"messages":[{"role":"user","content":"hej"}]}`)
	rec := g.record(t, 1)
	if r.Status != 200 || rec.Result != usage.ResultOK || rec.CompletionTokens != 100 || !rec.Routing.OutputUnderreported ||
		rec.Routing.ReportedOutput != 1 || !rec.Routing.UsageEstimated {
		t.Fatalf("%d record %+v %+v", r.Status, rec, rec.Routing)
	}
}

// TestPlaceholderUsageIsNotReported: message_start's output_tokens (1) is not taken as the
// output when no message_delta reports one: 50 deltas are charged 50.
func TestPlaceholderUsageIsNotReported(t *testing.T) {
	c := hostileCases()[9] // messages 50 deltas without usage
	up := streamUpstream(t, func(w io.Writer, _ func(), _ *http.Request) { io.WriteString(w, c.body) })
	rt := chatRoute("rt-h", "h", up, "SE", 1, 1)
	rt.Protocols = append(rt.Protocols, snapshot.EndpointMessages)
	g := startSimGateway(t, []snapshot.Route{rt})
	g.postPath(t, c.path, hostileRequest(c))
	if rec := g.record(t, 1); rec.CompletionTokens != 50 || rec.Routing.OutputUnderreported {
		t.Fatalf("record %+v %+v", rec, rec.Routing)
	}
}

// TestOutputBytesPerTokenPerModel: a model's output_bytes_per_token is the estimate's
// divisor: 300 bytes without usage charge 75 at 4 bytes per token (37 at the default 8).
func TestOutputBytesPerTokenPerModel(t *testing.T) {
	up := hostile(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"`+words(50)+`"},"finish_reason":"stop"}]}`)
	})
	g := startSimGateway(t, []snapshot.Route{chatRoute("rt-h", "h", up, "SE", 1, 1)})
	for i := range g.Snap.Models {
		if g.Snap.Models[i].ID == fixture.ModelChat {
			g.Snap.Models[i].OutputBytesPerToken = 4
		}
	}
	x, err := index.Build(g.Snap)
	if err != nil {
		t.Fatal(err)
	}
	g.Store.Swap(x)
	g.postPath(t, snapshot.EndpointChat, `{"model":"`+fixture.ModelChat+`","max_tokens":500,"messages":[{"role":"user","content":"hej"}]}`)
	if rec := g.record(t, 1); rec.CompletionTokens != 75 {
		t.Fatalf("charged %d output tokens, want 75", rec.CompletionTokens)
	}
}

// hostileRequest is the client's request of c.
func hostileRequest(c hostileCase) string {
	stream := fmt.Sprint(c.stream)
	switch c.path {
	case snapshot.EndpointResponses:
		return fmt.Sprintf(`{"model":"%s","input":"hej","max_output_tokens":%d,"stream":%s}`, fixture.ModelChat, c.bound, stream)
	case snapshot.EndpointCompletions:
		return fmt.Sprintf(`{"model":"%s","prompt":"hej","max_tokens":%d,"stream":%s}`, fixture.ModelChat, c.bound, stream)
	}
	return fmt.Sprintf(`{"model":"%s","messages":[{"role":"user","content":"hej"}],"max_tokens":%d,"stream":%s}`, fixture.ModelChat, c.bound, stream)
}

// postPath sends body to path with the fixture's Swedish key.
func (g *simGateway) postPath(t testing.TB, path, body string) result {
	t.Helper()
	return g.postTo(t, path, g.Keys.SE, body)
}
