package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func addFixtures(f *testing.F, dir, ext string) {
	files, _ := filepath.Glob(filepath.Join("testdata", dir, "*."+ext))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
}

func fuzzRequest(f *testing.F, dir string, fn func([]byte, string) ([]byte, error)) {
	addFixtures(f, dir, "json")
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"tool_result","content":[{"type":"image","source":{"type":"base64"}}]}]}]}`))
	f.Add([]byte(`{"input":[{"type":"function_call"},{"role":"assistant","content":[]}],"tool_choice":{"type":"function"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := fn(body, "upstream")
		if err != nil {
			if !errors.Is(err, ErrUnsupported) && !errors.Is(err, ErrInvalidRequest) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("output is not JSON: %s", out)
		}
	})
}

func FuzzMessagesToChat(f *testing.F)  { fuzzRequest(f, "messages_request", MessagesToChat) }
func FuzzResponsesToChat(f *testing.F) { fuzzRequest(f, "responses_request", ResponsesToChat) }

func FuzzChatResponses(f *testing.F) {
	addFixtures(f, "messages_response", "json")
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, fn := range []func([]byte, string) ([]byte, Usage, error){ChatToMessagesResponse, ChatToResponsesResponse} {
			out, u, err := fn(body, "m")
			if err != nil {
				if !errors.Is(err, ErrUpstream) {
					t.Fatalf("unexpected error kind: %v", err)
				}
				continue
			}
			if !json.Valid(out) || u.InputTokens < 0 || u.OutputTokens < 0 {
				t.Fatalf("bad output %s %+v", out, u)
			}
		}
	})
}

// FuzzStreams feeds each line of the input as one chunk to both stream translators.
func FuzzStreams(f *testing.F) {
	addFixtures(f, "streams", "sse")
	f.Fuzz(func(t *testing.T, sse []byte) {
		check := func(event, data []byte) error {
			if len(event) == 0 || !json.Valid(data) {
				t.Fatalf("bad event %q %s", event, data)
			}
			return nil
		}
		for _, s := range []streamer{NewChatToMessagesStream("m", check), NewChatToResponsesStream("m", check)} {
			for _, line := range bytes.Split(sse, []byte("\n")) {
				line = bytes.TrimPrefix(line, []byte("data: "))
				if len(bytes.TrimSpace(line)) == 0 {
					continue
				}
				var err error
				if string(line) == "[DONE]" {
					err = s.Finish()
				} else {
					err = s.Feed(line)
				}
				if err != nil {
					if !errors.Is(err, ErrUpstream) {
						t.Fatalf("unexpected error kind: %v", err)
					}
					break
				}
			}
			if u := s.Usage(); u.InputTokens < 0 || u.OutputTokens < 0 {
				t.Fatalf("negative usage %+v", u)
			}
		}
	})
}
