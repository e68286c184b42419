package conformance

import (
	"strings"
	"testing"
)

// Section "Generic method handling".

// supportedJSONEndpoints are the interface's JSON endpoints with their Allow header.
var supportedJSONEndpoints = map[string]string{
	"/v1/models":                "GET, HEAD, OPTIONS",
	"/v1/models/" + modelChat:   "GET, HEAD, OPTIONS",
	"/v1/chat/completions":      "POST, OPTIONS",
	"/v1/completions":           "POST, OPTIONS",
	"/v1/embeddings":            "POST, OPTIONS",
	"/v1/responses":             "POST, OPTIONS",
	"/v1/messages":              "POST, OPTIONS",
	"/v1/messages/count_tokens": "POST, OPTIONS",
	"/v1/systemone":             "POST, OPTIONS",
	"/v1/service/account":       "GET, HEAD, OPTIONS",
	"/v1/service/requests":      "GET, HEAD, OPTIONS",
	"/v1/service/requests/x":    "GET, HEAD, OPTIONS",
	"/v1/service/topup":         "POST, OPTIONS",
	"/v1/stripe/webhook":        "POST, OPTIONS",
	"/openapi.json":             "GET, HEAD, OPTIONS",
	"/healthz":                  "GET, HEAD, OPTIONS",
	"/docs":                     "GET, HEAD, OPTIONS",
}

// Rule 1: OPTIONS on supported JSON endpoints returns 204 with Allow.
func TestGenericMethods_OptionsIs204WithAllow(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	for path, allow := range supportedJSONEndpoints {
		r := s.Do(t, "OPTIONS", path, "", nil, nil)
		if r.Status != 204 || r.Header.Get("Allow") != allow || len(r.Body) != 0 {
			t.Errorf("OPTIONS %s: %d Allow %q body %q, want 204 Allow %q", path, r.Status, r.Header.Get("Allow"), r.Body, allow)
		}
	}
}

// Rule 1 (choice): the signup form's other methods, OPTIONS included, are 405 with Allow: POST.
func TestGenericMethods_SignupOptionsIs405(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	for _, m := range []string{"OPTIONS", "GET", "PUT", "DELETE"} {
		r := s.Do(t, m, "/v1/service/signup", "", nil, nil)
		wantError(t, r, 405, "method_not_allowed")
		if r.Header.Get("Allow") != "POST" {
			t.Errorf("%s signup: Allow %q", m, r.Header.Get("Allow"))
		}
	}
}

// Rule 2: HEAD on model, account, health and documentation reads returns headers without a body.
func TestGenericMethods_HeadReturnsHeadersOnly(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	for _, p := range []string{"/healthz", "/v1/models", "/v1/models/" + modelChat, "/v1/service/account",
		"/v1/service/requests", "/openapi.json", "/docs"} {
		get := s.Do(t, "GET", p, a.Key, nil, nil)
		head := s.Do(t, "HEAD", p, a.Key, nil, nil)
		if head.Status != get.Status || len(head.Body) != 0 {
			t.Errorf("HEAD %s: %d with %d body bytes (GET %d)", p, head.Status, len(head.Body), get.Status)
		}
		if head.Header.Get("Content-Type") != get.Header.Get("Content-Type") {
			t.Errorf("HEAD %s: Content-Type %q, GET %q", p, head.Header.Get("Content-Type"), get.Header.Get("Content-Type"))
		}
	}
}

// Rule 3: a wrong method returns 405 method_not_allowed with Allow.
func TestGenericMethods_WrongMethodIs405WithAllow(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	for path, allow := range supportedJSONEndpoints {
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			if strings.Contains(allow, m) {
				continue
			}
			r := s.Do(t, m, path, a.Key, nil, []byte(`{}`))
			wantError(t, r, 405, "method_not_allowed")
			if r.Header.Get("Allow") != allow {
				t.Errorf("%s %s: Allow %q, want %q", m, path, r.Header.Get("Allow"), allow)
			}
		}
	}
}

// Rule 4: an unknown path returns 404 endpoint_not_found. API clients ask for JSON; a
// browser's GET / gets a landing page for a person instead (outside the contract).
func TestGenericMethods_UnknownPathIs404(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	asJSON := map[string]string{"Accept": "application/json"}
	for _, p := range []string{"/", "/v1", "/v2/models", "/v1/chat", "/v1/service", "/v1/service/requests/a/b",
		"/v1/messages/batches", "/v1/modelsx", "/healthz/x"} {
		for _, key := range []string{"", a.Key} {
			wantError(t, s.Do(t, "GET", p, key, asJSON, nil), 404, "endpoint_not_found")
			wantError(t, s.Do(t, "POST", p, key, nil, []byte(`{}`)), 404, "endpoint_not_found")
		}
		// OPTIONS grants nothing on an unknown path.
		wantError(t, s.Do(t, "OPTIONS", p, "", nil, nil), 404, "endpoint_not_found")
	}
}
