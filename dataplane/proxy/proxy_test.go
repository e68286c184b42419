package proxy

import (
	"errors"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/tokens"
)

func TestRewriteBody(t *testing.T) {
	body := []byte(`{"model":"alias/x","messages":[],"extra":{"keep":[1,2]}}`)
	cases := []struct {
		name                 string
		sent, up             string
		stream, includeUsage bool
		wantModel            string
		wantUsage            bool
		same                 bool
	}{
		{"untouched", "m", "m", false, false, "alias/x", false, true},
		{"model rewrite", "alias/x", "upstream-m", false, false, "upstream-m", false, false},
		{"stream forces usage", "m", "m", true, false, "alias/x", true, false},
		{"client asked usage", "m", "m", true, true, "alias/x", false, true},
	}
	for _, c := range cases {
		out, err := RewriteBody(body, c.sent, c.up, c.stream, c.includeUsage, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := gjson.GetBytes(out, "model").Str; got != c.wantModel {
			t.Errorf("%s: model %q", c.name, got)
		}
		if got := gjson.GetBytes(out, "stream_options.include_usage").Bool(); got != c.wantUsage {
			t.Errorf("%s: include_usage %v", c.name, got)
		}
		if gjson.GetBytes(out, "extra").Raw != `{"keep":[1,2]}` {
			t.Errorf("%s: other fields changed: %s", c.name, out)
		}
		if c.same && &out[0] != &body[0] {
			t.Errorf("%s: body copied although unchanged", c.name)
		}
	}
}

func TestRewriteBodyContinuousUsage(t *testing.T) {
	out, err := RewriteBody([]byte(`{"model":"m","stream":true}`), "m", "m", true, false, true)
	if err != nil || string(out) != `{"model":"m","stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}` {
		t.Fatalf("%s %v", out, err)
	}
}

func TestClassify(t *testing.T) {
	cases := map[string]error{
		FailConnect:   &DialError{Err: errors.New("refused")},
		FailTimeout:   fasthttp.ErrTimeout,
		FailOverload:  fasthttp.ErrNoFreeConns,
		FailConfig:    ErrCredentials,
		FailTransport: fasthttp.ErrConnectionClosed,
	}
	for want, err := range cases {
		if got := Classify(err); got != want {
			t.Errorf("Classify(%v) = %s, want %s", err, got, want)
		}
	}
}

// readAll reads st to its end as a relay does: it stops after an error or the upstream's
// last event, and counts the events handed out and the output pieces among them.
func readAll(st *Stream) (events int, pieces int64) {
	for {
		if _, err := st.Next(); err != nil {
			return events, st.Delivered().Pieces
		}
		events++
		if st.Result.Ended {
			return events, st.Delivered().Pieces
		}
	}
}

func TestNextDropsUsageOnlyChunkButBillsIt(t *testing.T) {
	in := "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\n" +
		"data: [DONE]\n\n"
	for _, drop := range []bool{true, false} {
		var resp fasthttp.Response
		resp.SetBodyString(in)
		st := OpenStream(&resp, index.EPChat, StreamOptions{DropUsageOnly: drop})
		events, _ := readAll(st)
		st.Close()
		want := 3
		if drop {
			want = 2
		}
		if events != want || !st.Result.Ended || st.Result.Err != nil || st.Result.PromptTokens != 3 || st.Result.CompletionTokens != 1 {
			t.Errorf("drop=%v: %+v events %d", drop, st.Result, events)
		}
	}
}

// TestNextValidatesEvents: per protocol, a garbage event ends the stream with
// ErrInvalidEvent before it is handed out, generation events are marked for the output
// estimate, and the protocol's last event ends the stream.
func TestNextValidatesEvents(t *testing.T) {
	cases := []struct {
		name       string
		e          index.Endpoint
		in         string
		events     int
		deltas     int64
		invalid    bool
		ended      bool
		prompt     int64
		reportedIn bool
	}{
		{"chat ok", index.EPChat, "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n: keep-alive\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\ndata: [DONE]\n\n", 4, 2, false, true, 0, false}, // the keep-alive dropped
		{"chat garbage", index.EPChat, "data: {\"choices\":[]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: not json\n\ndata: [DONE]\n\n", 2, 1, true, false, 0, false},
		{"chat truncated json", index.EPChat, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"\n\n", 0, 0, true, false, 0, false},
		{"completions", index.EPCompletions, "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"text\":\"b\"}]}\n\ndata: [DONE]\n\n", 3, 2, false, true, 0, false},
		{"messages", index.EPMessages, "event: message_start\ndata: {\"message\":{\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\nevent: content_block_delta\ndata: {\"delta\":{\"type\":\"text_delta\",\"text\":\"a\"}}\n\nevent: content_block_delta\ndata: {\"delta\":{\"type\":\"text_delta\",\"text\":\"b\"}}\n\nevent: message_stop\ndata: {}\n\n", 4, 2, false, true, 9, true},
		{"messages garbage", index.EPMessages, "event: message_start\ndata: {\"message\":{\"usage\":{\"input_tokens\":9}}}\n\nevent: content_block_delta\ndata: {]\n\n", 1, 0, true, false, 9, true},
		{"responses", index.EPResponses, "event: response.output_text.delta\ndata: {\"delta\":\"a\"}\n\nevent: response.completed\ndata: {\"response\":{\"usage\":{\"input_tokens\":4,\"output_tokens\":1}}}\n\n", 2, 1, false, true, 4, true},
		{"responses garbage", index.EPResponses, "event: response.output_text.delta\ndata: <p>\n\n", 0, 0, true, false, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var resp fasthttp.Response
			resp.SetBodyString(c.in)
			st := OpenStream(&resp, c.e, StreamOptions{Bounds: tokens.NewBounds(100, 10, 1)})
			events, deltas := readAll(st)
			st.Close()
			r := st.Result
			if events != c.events || deltas != c.deltas || errors.Is(r.Err, ErrInvalidEvent) != c.invalid ||
				r.Ended != c.ended || r.PromptTokens != c.prompt || r.PromptReported != c.reportedIn {
				t.Fatalf("%+v events %d deltas %d", r, events, deltas)
			}
		})
	}
}

// TestResponsesEndsAtEveryLastEvent: response.failed and response.incomplete end the
// stream too, as failures.
func TestResponsesEndsAtEveryLastEvent(t *testing.T) {
	for _, name := range []string{"response.failed", "response.incomplete"} {
		var resp fasthttp.Response
		resp.SetBodyString("event: " + name + "\ndata: {\"response\":{}}\n\nevent: response.output_text.delta\ndata: {}\n\n")
		st := OpenStream(&resp, index.EPResponses, StreamOptions{})
		events, _ := readAll(st)
		st.Close()
		if events != 1 || !st.Result.Ended || st.Result.Err == nil {
			t.Errorf("%s: %+v events %d", name, st.Result, events)
		}
	}
}

// TestPeekRefusesInvalidFirstEvent: an invalid first event is reported by Peek, before
// anything reaches the client, so the attempt can fail over.
func TestPeekRefusesInvalidFirstEvent(t *testing.T) {
	for _, in := range []string{"data: <html>\n\n", "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":101}}\n\n"} {
		var resp fasthttp.Response
		resp.SetBodyString(in)
		st := OpenStream(&resp, index.EPChat, StreamOptions{Bounds: tokens.NewBounds(100, 10, 1)})
		if err := st.Peek(); !IsInvalid(err) {
			t.Errorf("%q: Peek %v", in, err)
		}
		st.Close()
	}
}

// FuzzRelay: any upstream stream is read without panic, and the usage kept is never
// negative nor beyond the bounds.
func FuzzRelay(f *testing.F) {
	f.Add("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":1e999}}\n\ndata: [DONE]\n\n", uint8(0))
	f.Add("event: message_start\ndata: {\"message\":{\"usage\":{\"input_tokens\":-4}}}\n\n", uint8(2))
	f.Add("event: response.completed\ndata: {\"response\":{\"usage\":{\"input_tokens\":4,\"output_tokens\":\"1\"}}}\n\n", uint8(3))
	f.Add("data: {\"choices\":[{\"delta\":{\"reasoning\":\"a\"}}],\"usage\":{\"prompt_tokens\":1}}\n\ndata:{\"error\":{\"message\":\"m\",\"http_status_code\":422}}\n\n", uint8(4))
	f.Add("data: \n\n: c\r\n\r\nerror: {\"code\":500,\"message\":\"x\"}\n", uint8(4))
	f.Fuzz(func(t *testing.T, in string, e uint8) {
		ep := []index.Endpoint{index.EPChat, index.EPCompletions, index.EPMessages, index.EPResponses}[int(e)%4]
		var resp fasthttp.Response
		resp.SetBodyString(in)
		st := OpenStream(&resp, ep, StreamOptions{Bounds: tokens.NewBounds(100, 10, 1),
			StripRunningUsage: e&4 != 0, MirrorReasoning: e&8 != 0})
		readAll(st)
		st.Close()
		r := st.Result
		if r.PromptTokens < 0 || r.PromptTokens > 100 || r.CompletionTokens < 0 || r.CompletionTokens > 10 {
			t.Fatalf("%+v", r)
		}
	})
}
