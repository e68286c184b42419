package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/dataplane/openapi"
)

var (
	adminSpecOnce sync.Once
	adminSpec     *openapi.Spec
	adminSpecErr  error
)

// checkAdminContract validates an admin API answer (status, content type, body, headers)
// against the published admin OpenAPI document: every admin call of this package's tests
// passes through it.
func checkAdminContract(t *testing.T, method, path string, status int, h http.Header, body []byte) {
	t.Helper()
	adminSpecOnce.Do(func() { adminSpec, adminSpecErr = openapi.CompileDocument(adminapi.OpenAPI()) })
	if adminSpecErr != nil {
		t.Fatalf("compile the admin OpenAPI document: %v", adminSpecErr)
	}
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	if err := adminSpec.ValidateResponse(method, path, status, h.Get("Content-Type"), body); err != nil {
		t.Errorf("admin contract: %v: %.300s", err, body)
	}
	if err := adminSpec.ValidateHeaders(method, path, status, h); err != nil {
		t.Errorf("admin contract: %v", err)
	}
}

func TestAdminOpenAPIDocument(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.mustStatus(e.do("GET", "/admin/v1/openapi.json", "", nil, nil), 200)
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	r.json(t, &doc)
	if doc.OpenAPI != "3.1.1" || len(doc.Paths) < 25 {
		t.Fatalf("document %s with %d paths", doc.OpenAPI, len(doc.Paths))
	}
	// Every documented operation names the least role it needs and answers errors with
	// the envelope.
	for p, ops := range doc.Paths {
		for m, op := range ops {
			o, _ := op.(map[string]any)
			role, _ := o["x-gateway-role"].(string)
			switch role {
			case "none", "viewer", "operator", "admin":
			default:
				t.Errorf("%s %s: x-gateway-role %q", m, p, role)
			}
			if _, ok := o["responses"].(map[string]any)["default"]; !ok {
				t.Errorf("%s %s: no default (error) response", m, p)
			}
		}
	}
	// The document is what the server serves.
	if !json.Valid(r.body) || string(r.body) != string(adminapi.OpenAPI()) {
		t.Fatal("served document differs from the embedded one")
	}
}
