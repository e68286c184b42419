package httpjson

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/sekgate/gateway/shared/apierror"
)

func TestWriteJSON(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteJSON(rec, http.StatusCreated, map[string]int{"a": 1})
	if rec.Code != http.StatusCreated {
		t.Fatalf("status %d", rec.Code)
	}
	if got := rec.Body.String(); got != "{\"a\":1}\n" {
		t.Fatalf("body %q", got)
	}
	if rec.Header().Get("Content-Type") != "application/json" || rec.Header().Get("Content-Length") != strconv.Itoa(rec.Body.Len()) {
		t.Fatalf("headers %v", rec.Header())
	}
}

func TestWriteJSONUnencodable(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteJSON(rec, http.StatusOK, math.NaN())
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("status %d", rec.Code)
	}
	var env struct {
		Error struct{ Code string } `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.Error.Code != apierror.CodeInternal {
		t.Fatalf("body %q (%v)", rec.Body.String(), err)
	}
}

func TestWriteError(t *testing.T) {
	tests := []struct {
		name  string
		e     *apierror.Error
		retry string
	}{
		{"plain", apierror.New(http.StatusNotFound, apierror.TypeNotFound, apierror.CodeNotFound, "x not found."), ""},
		{"retry", apierror.New(http.StatusServiceUnavailable, apierror.TypeAPI, apierror.CodeUnavailable, "later").WithRetryAfter(3), "3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			WriteError(rec, tt.e)
			if rec.Code != tt.e.Status {
				t.Fatalf("status %d", rec.Code)
			}
			if got, want := rec.Body.String(), string(tt.e.JSON(false))+"\n"; got != want {
				t.Fatalf("body %q, want %q", got, want)
			}
			if got := rec.Header().Get("Retry-After"); got != tt.retry {
				t.Fatalf("Retry-After %q, want %q", got, tt.retry)
			}
			if rec.Header().Get("Content-Length") != strconv.Itoa(rec.Body.Len()) {
				t.Fatalf("Content-Length %q for %d bytes", rec.Header().Get("Content-Length"), rec.Body.Len())
			}
		})
	}
}

func TestCheckAbsURL(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"https://example.com/x?y=1", true},
		{"http://127.0.0.1:8080", true},
		{"/relative", false},
		{"ftp://example.com", false},
		{"https://", false},
		{"://bad", false},
	}
	for _, tt := range tests {
		if err := CheckAbsURL(tt.in); (err == nil) != tt.ok {
			t.Errorf("CheckAbsURL(%q) = %v, want ok=%v", tt.in, err, tt.ok)
		}
	}
}
