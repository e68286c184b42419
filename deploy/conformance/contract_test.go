package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sekgate/gateway/dataplane/openapi"
)

// The contract check: every response the gateway gives any test of this package — raw HTTP
// and the SDKs alike — passes through checkingTransport, which validates status, content
// type, body (JSON Schema 2020-12; SSE events one by one) and headers against the embedded
// OpenAPI document. A mismatch fails the test that made the call.

var (
	specOnce sync.Once
	spec     *openapi.Spec
	specErr  error

	observedMu sync.Mutex
	observed   = map[string]int{} // "METHOD template status" -> count
)

func getSpec(t testing.TB) *openapi.Spec {
	t.Helper()
	specOnce.Do(func() { spec, specErr = openapi.Compile() })
	if specErr != nil {
		t.Fatalf("compile the OpenAPI document: %v", specErr)
	}
	return spec
}

// checkedClient is an HTTP client whose responses are validated against the document. It
// does not follow redirects (the 302 and 303 are themselves under test).
func checkedClient(t testing.TB) *http.Client {
	return &http.Client{
		Transport:     &checkingTransport{t: t, spec: getSpec(t), next: http.DefaultTransport},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

type checkingTransport struct {
	t    testing.TB
	spec *openapi.Spec
	next http.RoundTripper
}

func (c *checkingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	path := req.URL.EscapedPath()
	method := req.Method
	template, ok := c.spec.MatchPath(path)
	if !ok {
		template = path
	}
	observe(method, template, resp.StatusCode)
	if err := c.spec.ValidateHeaders(method, path, resp.StatusCode, resp.Header); err != nil {
		c.t.Errorf("contract: %s %s: %v", method, path, err)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body = &sseChecker{rc: resp.Body, done: func(body []byte) {
			if err := c.spec.ValidateResponse(method, path, resp.StatusCode, resp.Header.Get("Content-Type"), body); err != nil {
				c.t.Errorf("contract: %s %s: %v", method, path, err)
			}
		}}
		return resp, nil
	}
	body, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	if rerr != nil {
		return nil, rerr
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err := c.spec.ValidateResponse(method, path, resp.StatusCode, resp.Header.Get("Content-Type"), body); err != nil {
		c.t.Errorf("contract: %s %s: %v\nbody: %.600s", method, path, err, body)
	}
	checkGeneric(c.t, method, path, resp.StatusCode, resp.Header, body)
	return resp, nil
}

// checkGeneric asserts the rules every response shares: an X-Request-Id, JSON errors
// (never an empty body) and no cross-origin grant.
func checkGeneric(t testing.TB, method, path string, status int, h http.Header, body []byte) {
	if !strings.HasPrefix(h.Get("X-Request-Id"), "req_") {
		t.Errorf("%s %s: %d without X-Request-Id", method, path, status)
	}
	for name := range h {
		if strings.HasPrefix(strings.ToLower(name), "access-control-") {
			t.Errorf("%s %s: cross-origin header %s: %s", method, path, name, h.Get(name))
		}
	}
	if status >= 400 && method != http.MethodHead {
		if !strings.HasPrefix(h.Get("Content-Type"), "application/json") || len(body) == 0 {
			t.Errorf("%s %s: %d error is not JSON: %q %q", method, path, status, h.Get("Content-Type"), body)
		}
	}
}

// sseChecker validates a streamed body once it has been read to its end, or, when the
// reader stops early, the complete events read so far.
type sseChecker struct {
	rc   io.ReadCloser
	buf  bytes.Buffer
	done func([]byte)
	once sync.Once
}

func (s *sseChecker) Read(p []byte) (int, error) {
	n, err := s.rc.Read(p)
	s.buf.Write(p[:n])
	if err != nil {
		s.finish(err == io.EOF)
	}
	return n, err
}

func (s *sseChecker) Close() error {
	s.finish(false)
	return s.rc.Close()
}

func (s *sseChecker) finish(complete bool) {
	s.once.Do(func() {
		b := s.buf.Bytes()
		if !complete {
			b = completeEvents(b)
		}
		if len(b) > 0 {
			s.done(b)
		}
	})
}

// completeEvents cuts b after its last blank line (the end of the last whole event).
func completeEvents(b []byte) []byte {
	norm := bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	if i := bytes.LastIndex(norm, []byte("\n\n")); i >= 0 {
		return norm[:i+2]
	}
	return nil
}

var httpMethods = map[string]bool{"get": true, "put": true, "post": true, "delete": true, "options": true, "head": true, "patch": true, "trace": true}

func observe(method, template string, status int) {
	observedMu.Lock()
	observed[method+" "+template+" "+strconv.Itoa(status)]++
	observedMu.Unlock()
}

// documentedResponses lists "METHOD template status" of every response in the document.
func documentedResponses() ([]string, error) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapi.Document(), &doc); err != nil {
		return nil, err
	}
	var out []string
	for p, item := range doc.Paths {
		for m, raw := range item {
			if !httpMethods[m] {
				continue
			}
			var op struct {
				Responses map[string]json.RawMessage `json:"responses"`
			}
			if json.Unmarshal(raw, &op) != nil {
				continue
			}
			for code := range op.Responses {
				out = append(out, strings.ToUpper(m)+" "+p+" "+code)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// reportObserved prints which documented responses the run produced (set
// CONFORMANCE_REPORT=1); COVERAGE.md is kept from its output.
func reportObserved() {
	if os.Getenv("CONFORMANCE_REPORT") == "" {
		return
	}
	docs, err := documentedResponses()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	observedMu.Lock()
	defer observedMu.Unlock()
	seen := 0
	var missing []string
	for _, d := range docs {
		if observed[d] > 0 {
			seen++
		} else {
			missing = append(missing, d)
		}
	}
	fmt.Fprintf(os.Stderr, "contract: %d of %d documented responses observed\n", seen, len(docs))
	for _, m := range missing {
		fmt.Fprintln(os.Stderr, "  not observed:", m)
	}
	var extra []string
	for k := range observed {
		extra = append(extra, k)
	}
	sort.Strings(extra)
	for _, k := range extra {
		fmt.Fprintf(os.Stderr, "  observed: %s x%d\n", k, observed[k])
	}
}

// TestContract_DocumentIsOpenAPI311AndCompiles: the served document is the embedded one
// with its servers naming the gateway's base URL (not a placeholder), OpenAPI 3.1.1 with the date version, and every schema in it compiles as JSON Schema
// 2020-12 (the document's lint tests live in dataplane/openapi).
func TestContract_DocumentIsOpenAPI311AndCompiles(t *testing.T) {
	s := getStack(t)
	getSpec(t)
	r := s.Do(t, "GET", "/openapi.json", "", nil, nil)
	if r.Status != 200 || !bytes.Equal(r.Body, openapi.WithServer(s.DataURL)) {
		t.Fatalf("/openapi.json: %d, %d bytes (embedded %d)", r.Status, len(r.Body), len(openapi.Document()))
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
		Info    struct{ Version string }
		Servers []struct{ URL string }
	}
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.1" || doc.Info.Version != "2026-10-04" {
		t.Fatalf("openapi %q version %q", doc.OpenAPI, doc.Info.Version)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != s.DataURL {
		t.Fatalf("servers %+v, want %s", doc.Servers, s.DataURL)
	}
}

// TestContract_EveryDocumentedPathAnswersAsDocumented sends every method of every path of
// the document, without a key and with one, and validates each answer (the transport does);
// it also checks that no documented path is unknown to the gateway.
func TestContract_EveryDocumentedPathAnswersAsDocumented(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 100)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapi.Document(), &doc); err != nil {
		t.Fatal(err)
	}
	repl := strings.NewReplacer("{model}", modelChat, "{id}", "req_00000000000000000000000000")
	bodies := map[string]string{
		"/v1/chat/completions":      `{"model":"` + modelChat + `","messages":[{"role":"user","content":"Hej"}]}`,
		"/v1/completions":           `{"model":"` + modelChat + `","prompt":"Hej"}`,
		"/v1/embeddings":            `{"model":"` + modelEmbed + `","input":"Hej"}`,
		"/v1/responses":             `{"model":"` + modelChat + `","input":"Hej"}`,
		"/v1/messages":              `{"model":"` + modelChat + `","max_tokens":16,"messages":[{"role":"user","content":"Hej"}]}`,
		"/v1/messages/count_tokens": `{"model":"` + modelChat + `","messages":[{"role":"user","content":"Hej"}]}`,
		"/v1/systemone":             `{"model":"` + modelSystemOne + `","state":"Kunden vill säga upp avtalet.","questions":{"intent":{"type":"choice","choices":["cancel","other"]}}}`,
		"/v1/service/topup":         `{"amount_sek":100}`,
	}
	for p, item := range doc.Paths {
		path := repl.Replace(p)
		for m := range item {
			if !httpMethods[m] {
				continue
			}
			method := strings.ToUpper(m)
			if p == "/v1/service/signup" && method == "POST" {
				continue // submissions are rate-limited per address; the signup tests post forms
			}
			var body []byte
			if b, ok := bodies[p]; ok && method == "POST" {
				body = []byte(b)
			}
			for _, key := range []string{"", a.Key} {
				r := s.Do(t, method, path, key, nil, body)
				if r.Status == 404 && r.Header.Get("Content-Type") == "application/json" &&
					strings.Contains(string(r.Body), "endpoint_not_found") {
					t.Errorf("%s %s: the gateway does not know a documented path", method, path)
				}
			}
		}
	}
}
