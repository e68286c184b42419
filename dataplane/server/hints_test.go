package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sekgate/gateway/internal/simulator"
)

func TestPathHint(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"/chat/completions", "/v1/chat/completions"},
		{"/v1/v1/chat/completions", "/v1/chat/completions"},
		{"/v1/v1/v1/messages", "/v1/messages"},
		{"/messages", "/v1/messages"},
		{"/v1/v1/messages/count_tokens", "/v1/messages/count_tokens"},
		{"/models/llama", "/v1/models/llama"},
		{"/service/requests/req_1", "/v1/service/requests/req_1"},
		{"/v1/chat/completions", ""}, // a known path is not a mistake
		{"/chat/completionsx", ""},
		{"/v2/chat/completions", ""},
		{"/", ""},
		{"/v1/nope", ""},
	} {
		if got := pathHint([]byte(tt.in)); got != tt.want {
			t.Errorf("pathHint(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A client with a wrong base URL is told the path it meant, in its protocol's envelope; a
// model typo is answered with the closest models the account can use, never a hidden one.
func TestClientMistakeHints(t *testing.T) {
	g := startProtoGateway(t, simulator.Knobs{})
	for _, tc := range []struct {
		name, path, body, wantMsg string
		messagesShape             bool
	}{
		{"OpenAI SDK without /v1", "/chat/completions", `{"model":"sim-chat","messages":[]}`, "did you mean /v1/chat/completions?", false},
		{"OpenAI SDK with /v1 twice", "/v1/v1/chat/completions", `{}`, "did you mean /v1/chat/completions?", false},
		{"Anthropic SDK given /v1", "/v1/v1/messages", `{}`, "did you mean /v1/messages? Check the client's base URL: {base_url} without /v1", true},
		{"unknown path", "/v1/nope", `{}`, "unknown endpoint", false},
	} {
		r := g.do(t, "POST", tc.path, g.Key, tc.body)
		checkEnvelope(t, r, 404, "endpoint_not_found")
		var env struct {
			Type  string
			Error struct{ Message string }
		}
		if err := json.Unmarshal([]byte(r.Body), &env); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(env.Error.Message, tc.wantMsg) || (env.Type == "error") != tc.messagesShape {
			t.Errorf("%s: %s", tc.name, r.Body)
		}
	}
	chat := func(model string) string {
		r := g.do(t, "POST", "/v1/chat/completions", g.Key, `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`)
		checkEnvelope(t, r, 404, "model_not_found")
		return r.Body
	}
	if b := chat("sim-chta"); !strings.Contains(b, "did you mean sim-chat") {
		t.Errorf("typo: %s", b)
	}
	if b := chat("SIM-NATIVE"); !strings.Contains(b, "did you mean sim-native") {
		t.Errorf("case: %s", b)
	}
	if b := chat("sim-hidde"); strings.Contains(b, pmHidden) {
		t.Errorf("a hidden model was suggested: %s", b)
	}
	if b := chat("completely-different-name"); strings.Contains(b, "did you mean") {
		t.Errorf("far-off name got a suggestion: %s", b)
	}
}
