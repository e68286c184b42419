package outcome

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/dialect"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/shared/usage"
)

// TestEveryClassHasAMeaning fails when a class is added without its row in meanings.
func TestEveryClassHasAMeaning(t *testing.T) {
	names := map[string]Class{}
	for c := none + 1; c < numClasses; c++ {
		m := meanings[c]
		switch {
		case m.name == "":
			t.Errorf("class %d has no name", c)
		case m.result == "":
			t.Errorf("class %s has no record result", m.name)
		case m.client == nil:
			t.Errorf("class %s has no client answer", m.name)
		}
		if other, dup := names[m.name]; dup {
			t.Errorf("classes %d and %d share the name %q", other, c, m.name)
		}
		names[m.name] = c
	}
	for _, name := range proxyFailureNames(t) {
		if _, ok := transportClasses[name]; !ok {
			t.Errorf("proxy's failure %q has no class", name)
		}
	}
	for name, c := range transportClasses {
		if got := meanings[c].attemptError; got != name {
			t.Errorf("class %s records attempt error %q, want %q", meanings[c].name, got, name)
		}
	}
}

// proxyFailureNames reads the failure names proxy declares (its Fail* constants), so a
// new one without a class fails the test.
func proxyFailureNames(t *testing.T) []string {
	f, err := parser.ParseFile(token.NewFileSet(), "../proxy/classify.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range vs.Names {
			if strings.HasPrefix(name.Name, "Fail") && i < len(vs.Values) {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
					v, _ := strconv.Unquote(lit.Value)
					names = append(names, v)
				}
			}
		}
		return true
	})
	if len(names) < 5 {
		t.Fatalf("found only %v in proxy/classify.go", names)
	}
	return names
}

func statusResp(status int, body string, header ...string) *fasthttp.Response {
	r := &fasthttp.Response{}
	r.SetStatusCode(status)
	r.SetBodyString(body)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	return r
}

func TestClassify(t *testing.T) {
	type want struct {
		class   Class
		retry   bool
		breaker error
		result  string
		status  int
		message string // a substring of the client's message
	}
	reported := func(info dialect.Error) error { return &proxy.ReportedError{Info: info} }
	cases := []struct {
		name string
		err  error
		resp *fasthttp.Response
		want want
	}{
		{"ok", nil, statusResp(200, "{}"), want{class: none}},
		{"connect", &proxy.DialError{Err: errors.New("refused")}, nil,
			want{Connect, true, routing.ErrUnreachable, usage.ResultUpstreamError, 503, "cannot be reached"}},
		{"cancelled", proxy.ErrCancelled, nil,
			want{Cancelled, false, routing.ErrNeutral, usage.ResultCancelled, 499, ""}},
		{"stream timeout", fmt.Errorf("peek: %w", proxy.ErrStreamTimeout), nil,
			want{Timeout, true, routing.ErrRouteFailed, usage.ResultTimeout, 504, "in time"}},
		{"other transport", errors.New("broken pipe"), nil,
			want{Transport, true, routing.ErrRouteFailed, usage.ResultUpstreamError, 502, "broke the connection"}},
		{"400 refusal with the server's message", nil, statusResp(400, `{"error":{"message":"prompt too long","type":"BadRequestError"}}`),
			want{Refused, false, nil, usage.ResultRejected, 400, "prompt too long"}},
		{"413 kept", nil, statusResp(413, `{"error":{"message":"too big"}}`),
			want{Refused, false, nil, usage.ResultRejected, 413, "too big"}},
		{"429 with Retry-After", nil, statusResp(429, "", "Retry-After", "7"),
			want{RateLimited, true, routing.ErrNeutral, usage.ResultRateLimited, 429, "capacity"}},
		{"503", nil, statusResp(503, ""),
			want{Unavailable, true, routing.ErrRouteFailed, usage.ResultUpstreamError, 503, "unavailable"}},
		{"504", nil, statusResp(504, ""),
			want{GatewayTime, true, routing.ErrRouteFailed, usage.ResultTimeout, 504, "in time"}},
		{"502", nil, statusResp(502, `{"error":{"message":"bad"}}`),
			want{BadGateway, true, routing.ErrRouteFailed, usage.ResultUpstreamError, 502, "bad"}},
		{"500 not failed over", nil, statusResp(500, `{"error":"boom"}`),
			want{ServerError, false, routing.ErrRouteFailed, usage.ResultUpstreamError, 502, "boom"}},
		{"404 from the server", nil, statusResp(404, ""),
			want{ClientError, false, nil, usage.ResultUpstreamError, 502, "failed to serve"}},
		{"reported overflow", reported(dialect.Error{Message: "context length exceeded", Overflow: true}), nil,
			want{Refused, false, nil, usage.ResultRejected, 400, "context length"}},
		{"reported 429", reported(dialect.Error{Status: 429, Message: "busy"}), nil,
			want{RateLimited, true, routing.ErrNeutral, usage.ResultRateLimited, 429, "capacity"}},
		{"reported failure", reported(dialect.Error{Message: "CUDA out of memory"}), nil,
			want{Reported, true, routing.ErrRouteFailed, usage.ResultUpstreamError, 502, "CUDA"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := Classify(c.err, c.resp)
			if f.Class() != c.want.class {
				t.Fatalf("class %s, want %s", f, Of(c.want.class))
			}
			if !f.Failed() {
				return
			}
			if f.Retry() != c.want.retry || f.Breaker() != c.want.breaker || f.Result() != c.want.result || f.Status() != c.want.status {
				t.Errorf("%s: retry %v breaker %v result %s status %d; want %+v", f, f.Retry(), f.Breaker(), f.Result(), f.Status(), c.want)
			}
			if msg := f.Client().Message; !contains(msg, c.want.message) {
				t.Errorf("message %q lacks %q", msg, c.want.message)
			}
		})
	}
}

func TestClassifyRetryAfter(t *testing.T) {
	if ra := Classify(nil, statusResp(429, "", "Retry-After", "7")).Client().RetryAfter; ra != 7 {
		t.Errorf("429 Retry-After %d, want the server's 7", ra)
	}
	if ra := Classify(nil, statusResp(503, "")).Client().RetryAfter; ra != 1 {
		t.Errorf("503 without Retry-After: %d, want 1", ra)
	}
}

func TestStreamEnd(t *testing.T) {
	cases := []struct {
		name   string
		end    StreamEnd
		result string
		msg    string
	}{
		{"complete", StreamEnd{Done: true}, usage.ResultOK, ""},
		{"client gone", StreamEnd{Gone: true, Upstream: errors.New("x")}, usage.ResultCancelled, ""},
		{"invalid event", StreamEnd{Upstream: fmt.Errorf("%w", proxy.ErrInvalidEvent)}, usage.ResultUpstreamError, "invalid event"},
		{"timeout", StreamEnd{Upstream: proxy.ErrStreamTimeout}, usage.ResultTimeout, "in time"},
		{"bound", StreamEnd{Relay: ErrOutputBound}, usage.ResultIncomplete, "output limit"},
		{"translation", StreamEnd{Relay: errors.New("bad")}, usage.ResultIncomplete, "translated"},
		{"cut", StreamEnd{}, usage.ResultIncomplete, "before its last event"},
	}
	for _, c := range cases {
		if got := c.end.Result(); got != c.result {
			t.Errorf("%s: result %s, want %s", c.name, got, c.result)
		}
		if c.msg != "" && !contains(c.end.Message(), c.msg) {
			t.Errorf("%s: message %q lacks %q", c.name, c.end.Message(), c.msg)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
