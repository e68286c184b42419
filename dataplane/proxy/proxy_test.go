package proxy

import (
	"errors"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/catalog"
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
		out, err := RewriteBody(body, c.sent, c.up, c.stream, c.includeUsage)
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

func TestUsage(t *testing.T) {
	cases := []struct {
		e       catalog.Endpoint
		body    string
		in, out int64
		ok      bool
	}{
		{catalog.EPChat, `{"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`, 12, 3, true},
		{catalog.EPCompletions, `{"usage":{"prompt_tokens":5,"completion_tokens":2}}`, 5, 2, true},
		{catalog.EPEmbeddings, `{"usage":{"prompt_tokens":8,"completion_tokens":99,"total_tokens":8}}`, 8, 0, true},
		{catalog.EPResponses, `{"usage":{"input_tokens":4,"output_tokens":6}}`, 4, 6, true},
		{catalog.EPMessages, `{"usage":{"input_tokens":4,"output_tokens":6}}`, 4, 6, true},
		{catalog.EPChat, `{"usage":{"prompt_tokens":-5,"completion_tokens":2}}`, 0, 2, true},
		{catalog.EPChat, `{"usage":null}`, 0, 0, false},
		{catalog.EPChat, `not json`, 0, 0, false},
	}
	for i, c := range cases {
		in, out, ok := Usage(c.e, []byte(c.body))
		if in != c.in || out != c.out || ok != c.ok {
			t.Errorf("case %d: %d %d %v", i, in, out, ok)
		}
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

func TestRelayDropsUsageOnlyChunkButBillsIt(t *testing.T) {
	in := "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\n" +
		"data: [DONE]\n\n"
	for _, drop := range []bool{true, false} {
		var resp fasthttp.Response
		resp.SetBodyString(in)
		st := OpenStream(&resp, catalog.EPChat, drop, 0)
		var out fakeWriter
		st.Relay(out.writer())
		st.Close()
		want := 3
		if drop {
			want = 2
		}
		if st.Result.Events != want || out.flushes() != want || !st.Result.Done || st.Result.PromptTokens != 3 || st.Result.CompletionTokens != 1 {
			t.Errorf("drop=%v: %+v flushes %d", drop, st.Result, out.flushes())
		}
	}
}
