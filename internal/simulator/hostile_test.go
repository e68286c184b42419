package simulator

import (
	"net/http"
	"strings"
	"testing"
)

// The hostile-upstream knobs: usage overrides written as given, garbage and truncated
// events, a wrong content type.
func TestHostileKnobs(t *testing.T) {
	s := startSim(t, Knobs{})
	streamWithUsage := `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`

	_, _, body := post(t, s, "/v1/chat/completions", chatBody,
		"X-Sim-Usage-Completion-Tokens", "9223372036854775807", "X-Sim-Usage-Prompt-Tokens", "1e999")
	if !strings.Contains(string(body), `"prompt_tokens":1e999,"completion_tokens":9223372036854775807`) {
		t.Fatalf("usage override not applied: %s", body)
	}
	_, _, body = post(t, s, "/v1/chat/completions", `{"model":"m","sim":{"usage_completion_tokens":"-5"},"messages":[{"role":"user","content":"hi"}]}`)
	if !strings.Contains(string(body), `"completion_tokens":-5`) {
		t.Fatalf("body usage override not applied: %s", body)
	}
	_, _, body = post(t, s, "/v1/chat/completions", streamWithUsage, "X-Sim-Usage-Completion-Tokens", "-7")
	if !strings.Contains(string(body), `"completion_tokens":-7`) {
		t.Fatalf("stream usage override not applied: %s", body)
	}
	// Not a JSON number: ignored.
	_, _, body = post(t, s, "/v1/chat/completions", chatBody, "X-Sim-Usage-Completion-Tokens", `1,"x":2`)
	if strings.Contains(string(body), `"x":2`) {
		t.Fatalf("usage override injected JSON: %s", body)
	}

	status, _, body := post(t, s, "/v1/chat/completions", chatStream, "X-Sim-Garbage-After-Events", "2")
	if status != 200 || !strings.Contains(string(body), "data: <html>not json{{\n\n") || !strings.HasSuffix(string(body), "data: [DONE]\n\n") {
		t.Fatalf("garbage event: %d %q", status, body)
	}

	req, _ := http.NewRequest("POST", "http://"+s.Addr()+"/v1/chat/completions", strings.NewReader(chatStream))
	req.Header.Set("X-Sim-Truncate-After-Events", "3")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw := readAllLoose(resp)
	if strings.Count(raw, "\n\n") != 3 || strings.HasSuffix(raw, "\n\n") || strings.Contains(raw, "[DONE]") {
		t.Fatalf("truncated stream: %q", raw)
	}

	_, hdr, _ := post(t, s, "/v1/chat/completions", chatStream, "X-Sim-Content-Type", "text/html")
	if hdr.Get("Content-Type") != "text/html" {
		t.Fatalf("content type %q", hdr.Get("Content-Type"))
	}
	_, hdr, _ = post(t, s, "/v1/chat/completions", chatBody, "X-Sim-Content-Type", "text/plain")
	if hdr.Get("Content-Type") != "text/plain" {
		t.Fatalf("content type %q", hdr.Get("Content-Type"))
	}
}

// readAllLoose reads a body up to the connection's end, keeping what arrived before an
// abort.
func readAllLoose(resp *http.Response) string {
	defer resp.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			return sb.String()
		}
	}
}
