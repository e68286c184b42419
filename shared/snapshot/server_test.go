package snapshot

import (
	"errors"
	"testing"
)

// TestRouteServer: a route's server field is empty (openai) or one of Servers.
func TestRouteServer(t *testing.T) {
	r := Route{ID: "r", BaseURL: "http://127.0.0.1:8000/v1"}
	for _, s := range append([]string{""}, Servers...) {
		r.Server = s
		if err := r.Validate(); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"vLLM", "llama.cpp", "triton"} {
		r.Server = s
		var fe *FieldError
		if err := r.Validate(); !errors.As(err, &fe) || fe.Field != "server" {
			t.Errorf("%q: %v", s, err)
		}
	}
}
