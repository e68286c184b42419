package conformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Section "Errors": the envelope and each status of the table where the stack can produce
// it. Every error any test receives is also validated against the document's envelope
// schema by the transport.

// Envelope: error.type and error.message are strings, code and param string or null.
func TestErrors_Envelope_HasTypeMessageCodeParam(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	r := s.Post(t, "/v1/chat/completions", a.Key, chatReq("no-such-model"))
	e := wantError(t, r, 404, "model_not_found")
	if e.Error.Param == nil || *e.Error.Param != "model" || e.Type != "" {
		t.Fatalf("envelope %s", r.Body)
	}
	var raw map[string]map[string]any
	if err := json.Unmarshal(r.Body, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"type", "message", "code", "param"} {
		if _, ok := raw["error"][k]; !ok {
			t.Errorf("envelope lacks error.%s: %s", k, r.Body)
		}
	}
}

// Envelope: Messages-style errors also carry the top-level type "error".
func TestErrors_Envelope_MessagesStyleHasTypeError(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	for _, r := range []Response{
		s.Post(t, "/v1/messages", a.Key, map[string]any{"model": "no-such-model", "max_tokens": 8, "messages": []any{}}),
		s.Do(t, "POST", "/v1/messages", "", nil, messagesBody),
		s.Post(t, "/v1/messages/count_tokens", a.Key, chatReq(modelChat)),
	} {
		if e := wantError(t, r, r.Status, ""); e.Type != "error" {
			t.Errorf("%d without top-level type error: %s", r.Status, r.Body)
		}
	}
	// OpenAI-style errors do not.
	if e := wantError(t, s.Do(t, "GET", "/v1/models/nope", a.Key, nil, nil), 404, ""); e.Type != "" {
		t.Errorf("OpenAI-style error with top-level type %q", e.Type)
	}
}

// Envelope: unknown paths return JSON 404 endpoint_not_found, never an empty body.
func TestErrors_Envelope_UnknownPathIs404EndpointNotFound(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	for _, m := range []string{"GET", "POST", "PUT", "DELETE", "PATCH"} {
		wantError(t, s.Do(t, m, "/v1/not-a-thing", "", nil, nil), 404, "endpoint_not_found")
	}
}

// Envelope: HEAD responses have headers only, errors included.
func TestErrors_Envelope_HeadErrorsHaveNoBody(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	for _, p := range []string{"/v1/models", "/v1/not-a-thing"} {
		r := s.Do(t, "HEAD", p, "", nil, nil)
		if r.Status < 400 || len(r.Body) != 0 || r.Header.Get("X-Request-Id") == "" {
			t.Errorf("HEAD %s: %d, %d body bytes", p, r.Status, len(r.Body))
		}
	}
}

// 400: invalid input.
func TestErrors_400_InvalidInput(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	for name, body := range map[string]string{
		"malformed JSON":    `{"model":`,
		"not an object":     `[1,2]`,
		"missing model":     `{"messages":[{"role":"user","content":"x"}]}`,
		"missing messages":  `{"model":"` + modelChat + `"}`,
		"messages not list": `{"model":"` + modelChat + `","messages":"x"}`,
		"empty body":        ``,
	} {
		r := s.Do(t, "POST", "/v1/chat/completions", a.Key, nil, []byte(body))
		if e := wantError(t, r, 400, ""); e.Error.Type != "invalid_request_error" {
			t.Errorf("%s: type %q", name, e.Error.Type)
		}
	}
}

// 400: a key_id that does not match its pattern.
func TestErrors_400_KeyIDPattern(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	wantError(t, s.Do(t, "GET", "/v1/service/requests?key_id=nope", a.Key, nil, nil), 400, "")
}

// 400: no approved route supports the protocol.
func TestErrors_400_NoRouteSupportsProtocol(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	e := wantError(t, s.Post(t, "/v1/embeddings", a.Key, map[string]any{"model": modelChat, "input": "x"}), 400, "")
	if e.Error.Type != "invalid_request_error" {
		t.Errorf("type %q", e.Error.Type)
	}
}

// 401: missing, unknown, revoked or expired key (see the Authentication tests for each).
func TestErrors_401_Unauthenticated(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	e := wantError(t, s.Post(t, "/v1/chat/completions", "", chatReq(modelChat)), 401, "")
	if e.Error.Type != "authentication_error" {
		t.Errorf("type %q", e.Error.Type)
	}
}

// 402: positive balance required (type insufficient_quota, message that the balance is
// exhausted).
func TestErrors_402_BalanceExhausted(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 0, modelChat, modelEmbed)
	for _, p := range []string{"/v1/chat/completions", "/v1/embeddings", "/v1/messages"} {
		body := chatReq(modelChat, "max_tokens", 8)
		if p == "/v1/embeddings" {
			body = map[string]any{"model": modelEmbed, "input": "x"}
		}
		e := wantError(t, s.Post(t, p, a.Key, body), 402, "")
		if e.Error.Type != "insufficient_quota" || !strings.Contains(strings.ToLower(e.Error.Message), "balance") {
			t.Errorf("%s: %+v", p, e.Error)
		}
	}
}

// 403: a suspended account (the residency 403 needs a deployment without any route the
// policy allows; dataplane/server's TestResidencyUnsatisfiable proves it).
func TestErrors_403_SuspendedAccount(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 100, modelChat)
	s.Admin(t, "PATCH", "/admin/v1/accounts/"+a.ID, map[string]any{"suspended": true})
	s.waitFor(t, "suspension", func() bool {
		return s.Do(t, "GET", "/v1/service/account", a.Key, nil, nil).Status == 403 ||
			s.Post(t, "/v1/embeddings", a.Key, map[string]any{"model": modelEmbed, "input": "x"}).Status == 403
	})
	for _, r := range []Response{
		s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat)),
		s.Post(t, "/v1/messages", a.Key, chatReq(modelChat, "max_tokens", 8)),
		s.Do(t, "GET", "/v1/models", a.Key, nil, nil),
	} {
		if e := wantError(t, r, 403, ""); e.Error.Type != "permission_error" {
			t.Errorf("type %q", e.Error.Type)
		}
		noRouteHeaders(t, r.Header)
	}
}

// 404: endpoint_not_found, model_not_found and an unknown request record.
func TestErrors_404_Kinds(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	wantError(t, s.Do(t, "GET", "/v1/nothing", a.Key, nil, nil), 404, "endpoint_not_found")
	wantError(t, s.Post(t, "/v1/chat/completions", a.Key, chatReq("no-such-model")), 404, "model_not_found")
	wantError(t, s.Do(t, "GET", "/v1/service/requests/req_nope", a.Key, nil, nil), 404, "")
}

// 405: method_not_allowed with Allow.
func TestErrors_405_HasAllow(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	r := s.Do(t, "GET", "/v1/chat/completions", "", nil, nil)
	wantError(t, r, 405, "method_not_allowed")
	if r.Header.Get("Allow") != "POST, OPTIONS" {
		t.Errorf("Allow %q", r.Header.Get("Allow"))
	}
}

// 413: an inference request over 8 MiB (announced by Content-Length; the gateway answers
// before the body arrives).
func TestErrors_413_BodyOver8MiB(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	for _, p := range []string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses", "/v1/messages"} {
		r := s.rawPost(t, p, a.Key, 8<<20+1)
		wantError(t, r, 413, "")
	}
}

// rawPost announces a body of n bytes, sends none of it, and reads the answer; the answer
// is validated against the document like every other.
func (s *Stack) rawPost(t testing.TB, path, key string, n int) Response {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(s.DataURL, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, key, n)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	req, _ := http.NewRequest("POST", s.DataURL+path, nil)
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatalf("POST %s (%d bytes announced): %v", path, n, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	sp := getSpec(t)
	if err := sp.ValidateResponse("POST", path, resp.StatusCode, resp.Header.Get("Content-Type"), body); err != nil {
		t.Errorf("contract: %v", err)
	}
	if err := sp.ValidateHeaders("POST", path, resp.StatusCode, resp.Header); err != nil {
		t.Errorf("contract: %v", err)
	}
	checkGeneric(t, "POST", path, resp.StatusCode, resp.Header, body)
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

// bigBody is a JSON object of exactly n bytes.
func bigBody(n int) []byte {
	head := []byte(`{"model":"` + modelChat + `","pad":"`)
	tail := []byte(`"}`)
	b := make([]byte, 0, n)
	b = append(b, head...)
	b = append(b, bytes.Repeat([]byte("a"), n-len(head)-len(tail))...)
	return append(b, tail...)
}

// 429: the provider's capacity limit, with Retry-After when present.
func TestErrors_429_ProviderCapacityWithRetryAfter(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	r := s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat, "sim", sim("status", 429, "retry_after", 7)))
	wantError(t, r, 429, "")
	if r.Header.Get("Retry-After") != "7" {
		t.Errorf("Retry-After %q", r.Header.Get("Retry-After"))
	}
}

// 429: the account's rate limit.
func TestErrors_429_AccountRateLimit(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 100, modelChat)
	s.Admin(t, "PATCH", "/admin/v1/accounts/"+a.ID, map[string]any{"limits": map[string]any{"requests_per_second": 1, "burst": 1}})
	var limited Response
	s.waitFor(t, "a 429 under a 1/s limit", func() bool {
		for i := 0; i < 4; i++ {
			if r := s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat)); r.Status == 429 {
				limited = r
				return true
			}
		}
		return false
	})
	e := wantError(t, limited, 429, "")
	if e.Error.Type != "rate_limit_error" {
		t.Errorf("type %q", e.Error.Type)
	}
	if ra := limited.Header.Get("Retry-After"); ra != "" {
		if n, err := strconv.Atoi(ra); err != nil || n < 0 {
			t.Errorf("Retry-After %q", ra)
		}
	}
}

// 501: endpoint_not_supported, nothing forwarded (see the Endpoints tests).
func TestErrors_501_NotSupported(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	e := wantError(t, s.Do(t, "POST", "/v1/images/generations", "", nil, []byte(`{}`)), 501, "endpoint_not_supported")
	if e.DocumentationURL == "" {
		t.Error("no documentation_url")
	}
}

// 502: provider transport failure or invalid response.
func TestErrors_502_ProviderFailure(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	for name, r := range map[string]Response{
		"invalid response":   s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat, "sim", sim("malformed", true))),
		"dropped connection": s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat, "sim", sim("drop", true))),
	} {
		if r.Status != 502 {
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
			continue
		}
		wantError(t, r, 502, "")
		if r.Header.Get("X-Service-Provider") == "" {
			t.Errorf("%s: no X-Service-Provider although execution was attempted", name)
		}
	}
}

// 503: a route known unreachable (its server refuses connections) answers like a
// misconfigured one, with Retry-After and without inviting a quick retry; execution was
// attempted, so the provider is named.
func TestErrors_503_UnreachableRoute(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	r := s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelDead))
	e := wantError(t, r, 503, "no_route_available")
	if !strings.Contains(e.Error.Message, "cannot be reached") || r.Header.Get("Retry-After") == "" {
		t.Errorf("unreachable route: %q, Retry-After %q", e.Error.Message, r.Header.Get("Retry-After"))
	}
}

// 503: no eligible route or providers recovering, with Retry-After.
func TestErrors_503_WithRetryAfter(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	r := s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat, "sim", sim("status", 503)))
	wantError(t, r, 503, "")
	if n, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || n < 0 {
		t.Errorf("Retry-After %q", r.Header.Get("Retry-After"))
	}
}

// 504: provider timeout (the route's first-byte timeout is 300 ms).
func TestErrors_504_ProviderTimeout(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	start := time.Now()
	r := s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelSlow, "sim", sim("latency_ms", 10000)))
	wantError(t, r, 504, "")
	// The provider would answer after 10 s: a 504 within 8 s, however busy the machine,
	// came from the route's timeouts.
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("504 after %v", d)
	}
}

// The table's statuses are produced on the raw socket too: a request whose body exceeds
// 8 MiB is answered 413 without reading it all.
func TestErrors_413_AnsweredBeforeBodyArrives(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(s.DataURL, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", a.Key, 9<<20)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 512)
	n, _ := conn.Read(buf)
	if !bytes.HasPrefix(buf[:n], []byte("HTTP/1.1 413")) || !bytes.Contains(buf[:n], []byte("X-Request-Id")) {
		t.Fatalf("answer %q", buf[:n])
	}
}
