package catalog

import (
	"errors"
	"testing"
)

// A route's state in a file is enabled (written as nothing), disabled or draining;
// anything else is refused naming the field.
func TestRouteState(t *testing.T) {
	for _, tt := range []struct {
		state, want, err string
	}{
		{"", "", ""},
		{"enabled", "", ""},
		{"disabled", "disabled", ""},
		{"draining", "draining", ""},
		{"paused", "", "models[0].routes[0].state"},
		{"Disabled", "", "models[0].routes[0].state"},
	} {
		t.Run(tt.state, func(t *testing.T) {
			c, err := ParseYAML([]byte(`models:
  - id: m
    endpoint: /v1/chat/completions
    routes:
      - {id: r, provider: p, base_url: "http://127.0.0.1:1/v1", region: se, country: SE, weight: 1, state: "` + tt.state + `"}
`))
			if err != nil {
				t.Fatal(err)
			}
			err = c.Validate()
			var ce *Error
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.err != "" && (!errors.As(err, &ce) || ce.Param != tt.err):
				t.Fatalf("error %v, want one at %s", err, tt.err)
			case tt.err == "" && c.Models[0].Routes[0].State != tt.want:
				t.Fatalf("state %q, want %q", c.Models[0].Routes[0].State, tt.want)
			}
		})
	}
}
