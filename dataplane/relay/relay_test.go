package relay

import (
	"bufio"
	"errors"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/proxy"
)

// flushCounter counts the writes reaching the client's connection (one per flush) and
// fails the ones after failAfter (0: never).
type flushCounter struct{ n, failAfter int }

func (f *flushCounter) Write(p []byte) (int, error) {
	f.n++
	if f.failAfter > 0 && f.n > f.failAfter {
		return 0, errors.New("client gone")
	}
	return len(p), nil
}

// TestRelayFlushesEachEvent: a same-protocol stream reaches the client one flush per
// event, the usage-only chunk the gateway asked for is dropped but billed, and the client's
// stream is complete after [DONE].
func TestRelayFlushesEachEvent(t *testing.T) {
	in := "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\n" +
		"data: [DONE]\n\n"
	for _, drop := range []bool{true, false} {
		var resp fasthttp.Response
		resp.SetBodyString(in)
		st := proxy.OpenStream(&resp, index.EPChat, proxy.StreamOptions{DropUsageOnly: drop})
		var out flushCounter
		bw := bufio.NewWriterSize(&out, 64<<10)
		rel := Protocol{Client: index.EPChat}.Relay(bw, st)
		st.Close()
		// The usage chunk is a chat chunk like any other when relayed; it carries no output.
		want, deltas := int64(4), int64(1)
		if drop {
			want = 3
		}
		// [DONE] waits in the buffer until the request's record is written (the caller
		// flushes it then).
		if int64(out.n) != want-1 || bw.Buffered() == 0 {
			t.Errorf("drop=%v: %d flushes before the record, want %d, and [DONE] held", drop, out.n, want-1)
		}
		_ = bw.Flush()
		if int64(rel.Events) != want || int64(out.n) != want || !rel.Done || rel.Gone || rel.Out.Pieces != deltas ||
			st.Result.PromptTokens != 3 || st.Result.CompletionTokens != 1 {
			t.Errorf("drop=%v: %+v %+v flushes %d", drop, st.Result, rel, out.n)
		}
	}
}

// TestRelayCountsDeliveredDeltas: the output estimate counts the generation events the
// client received, not one whose write failed; a stream cut by the client is not complete.
func TestRelayCountsDeliveredDeltas(t *testing.T) {
	in := "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{\"content\":\"c\"}}]}\n\n" +
		"data: [DONE]\n\n"
	cases := []struct {
		name string
		p    Protocol
	}{
		{"same protocol", Protocol{Client: index.EPChat}},
		{"translated", Protocol{Client: index.EPMessages, Translate: true, Model: "m"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var resp fasthttp.Response
			resp.SetBodyString(in)
			st := proxy.OpenStream(&resp, index.EPChat, proxy.StreamOptions{})
			out := flushCounter{failAfter: 2}
			rel := c.p.Relay(bufio.NewWriterSize(&out, 64<<10), st)
			st.Close()
			if !rel.Gone || rel.Done || rel.Events != 2 || rel.Out.Pieces >= 3 || (!c.p.Translate && rel.Out.Pieces != 1) {
				t.Errorf("%+v", rel)
			}
		})
	}
}
