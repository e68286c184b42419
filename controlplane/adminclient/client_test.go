package adminclient

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestNewValidatesURL(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:8081", "ftp://x", "http://", "://x"} {
		if _, err := New(Config{BaseURL: u}); err == nil {
			t.Errorf("%q accepted", u)
		}
	}
	if _, err := New(Config{BaseURL: "http://127.0.0.1:8081/"}); err != nil {
		t.Error(err)
	}
}

func TestDo(t *testing.T) {
	var gotPath, gotAuth, gotBody string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotAuth = r.URL.EscapedPath(), r.Header.Get("Authorization")
		b, _ := io.ReadAll(r.Body)
		gotBody = string(b)
		switch r.URL.Path {
		case "/admin/v1/snapshot":
			io.WriteString(w, `{"version":3,"hash":"h","generated_at":"2026-11-01T00:00:00Z"}`)
		case "/admin/v1/catalog":
			io.WriteString(w, `{"models":2,"routes":5}`)
		default:
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"error":{"type":"permission_error","message":"nope","code":"forbidden","param":"x"}}`)
		}
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL + "/", Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	snap, raw, err := c.Snapshot(ctx)
	if err != nil || snap.Version != 3 || !json.Valid(raw) || gotAuth != "Bearer tok" || gotPath != "/admin/v1/snapshot" {
		t.Fatalf("snapshot %+v %s %v auth %q path %q", snap, raw, err, gotAuth, gotPath)
	}
	res, _, err := c.PutCatalog(ctx, json.RawMessage(`{"models":[]}`), false)
	if err != nil || res.Routes != 5 || gotBody != `{"models":[]}` {
		t.Fatalf("catalog %+v %v body %q", res, err, gotBody)
	}
	_, err = c.DisableModel(ctx, "acct_1", "meta-llama/Llama-3.1-8B-Instruct")
	if gotPath != "/admin/v1/accounts/acct_1/models/meta-llama%2FLlama-3.1-8B-Instruct" {
		t.Errorf("path %q", gotPath)
	}
	var ae *Error
	if !errors.As(err, &ae) || ae.Status != 403 || ae.Type != "permission_error" || ae.Code != "forbidden" || ae.Param != "x" || ae.Message != "nope" {
		t.Fatalf("error %#v", err)
	}
	if !errors.Is(err, ErrForbidden) || errors.Is(err, ErrUnauthorized) {
		t.Error("403 should wrap ErrForbidden, not ErrUnauthorized")
	}
	if want := "403 Forbidden: nope (type permission_error, code forbidden, param x)"; ae.Error() != want {
		t.Errorf("message %q, want %q", ae.Error(), want)
	}
}

func TestDecodeError(t *testing.T) {
	tests := []struct {
		status int
		body   string
		want   string
	}{
		{500, `{"error":{"type":"api_error","message":"boom","code":null,"param":null}}`, "500 Internal Server Error: boom (type api_error)"},
		{502, "bad gateway\n", "502 Bad Gateway: bad gateway"},
		{404, "", "404 Not Found"},
		{400, `{"type":"error","error":{"type":"invalid_request_error","message":"m"}}`, "400 Bad Request: m (type invalid_request_error)"},
		{503, strings.Repeat("x", 400), "503 Service Unavailable: " + strings.Repeat("x", 300) + "..."},
	}
	for _, tt := range tests {
		if got := decodeError(tt.status, []byte(tt.body)).Error(); got != tt.want {
			t.Errorf("%d %q: %q, want %q", tt.status, tt.body, got, tt.want)
		}
	}
}

// FuzzDecodeError: any error body renders without panicking and keeps the status.
func FuzzDecodeError(f *testing.F) {
	f.Add(400, []byte(`{"error":{"type":"t","message":"m","code":"c","param":"p"}}`))
	f.Add(500, []byte(`{"error":"string"}`))
	f.Add(401, []byte(`null`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		e := decodeError(status, body)
		if e.Status != status || e.Error() == "" {
			t.Fatalf("%d %q -> %#v", status, body, e)
		}
	})
}
