package translate

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sekgate/gateway/dataplane/dialect"
)

// dialectOptions are the options of every server's table.
func dialectOptions() []Options {
	var out []Options
	for _, n := range dialect.Names() {
		out = append(out, Options{Dialect: dialect.Of(n), Stops: []string{"END"}})
	}
	return out
}

// FuzzDialectRequests: every server's request translation yields JSON or a known error.
func FuzzDialectRequests(f *testing.F) {
	addFixtures(f, "messages_request", "json")
	addFixtures(f, "responses_request", "json")
	f.Add([]byte(`{"thinking":{"type":"enabled","budget_tokens":2048},"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"x"}]}]}`))
	f.Add([]byte(`{"reasoning":{"effort":"high"},"input":[{"type":"reasoning","content":[{"type":"reasoning_text","text":"t"}]},{"role":"assistant","content":"x"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, o := range dialectOptions() {
			for _, fn := range []func([]byte, string, Options) ([]byte, error){MessagesToChatWith, ResponsesToChatWith} {
				out, err := fn(body, "up", o)
				if err != nil {
					if !errors.Is(err, ErrUnsupported) && !errors.Is(err, ErrInvalidRequest) {
						t.Fatalf("unexpected error kind: %v", err)
					}
					continue
				}
				if !json.Valid(out) {
					t.Fatalf("output is not JSON: %s", out)
				}
			}
		}
	})
}

// FuzzDialectStreams: every server's chunks, fed to both stream translators, give valid
// events, and Fail always ends a stream that has not finished with a valid event.
func FuzzDialectStreams(f *testing.F) {
	addFixtures(f, "streams", "sse")
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"role":null,"content":null,"reasoning_content":"a","tool_calls":null},"matched_stop":null}],"usage":null}` + "\n" +
		`{"choices":[{"index":0,"delta":{"content":"b","tool_calls":null},"finish_reason":"stop_sequence","matched_stop":"END","stop_reason":7}],"usage":null}` + "\n[DONE]"))
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"reasoning":"a"}}]}` + "\n" + `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{"}}]}}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		check := func(event, data []byte) error {
			if len(event) == 0 || !json.Valid(data) {
				t.Fatalf("bad event %q %s", event, data)
			}
			return nil
		}
		for _, o := range dialectOptions() {
			ss := []interface {
				streamer
				Fail(string) error
			}{NewChatToMessagesStream("m", check).Configure(o), NewChatToResponsesStream("m", check).Configure(o)}
			for _, s := range ss {
				for _, line := range strings.Split(string(in), "\n") {
					if strings.TrimSpace(line) == "" {
						continue
					}
					var err error
					if line == "[DONE]" {
						err = s.Finish()
					} else {
						err = s.Feed([]byte(line))
					}
					if err != nil {
						if !errors.Is(err, ErrUpstream) {
							t.Fatalf("unexpected error kind: %v", err)
						}
						break
					}
				}
				if err := s.Fail("cut"); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// FuzzDialectAnswers: every server's whole answers translate to JSON or ErrUpstream.
func FuzzDialectAnswers(f *testing.F) {
	addFixtures(f, "messages_response", "json")
	f.Add([]byte(`{"choices":[{"message":{"content":"x","reasoning_content":"t","tool_calls":null},"finish_reason":"stop","matched_stop":151645}],"usage":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, o := range dialectOptions() {
			for _, fn := range []func([]byte, string, Options) ([]byte, Usage, error){ChatToMessagesResponseWith, ChatToResponsesResponseWith} {
				out, _, err := fn(body, "m", o)
				if err != nil {
					if !errors.Is(err, ErrUpstream) {
						t.Fatalf("unexpected error kind: %v", err)
					}
					continue
				}
				if !json.Valid(out) {
					t.Fatalf("bad output %s", out)
				}
			}
		}
	})
}
