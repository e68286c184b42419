package translate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// checkGolden compares got with the golden file path, or rewrites it with -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs (run go test -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func indent(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, b)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

// eachFixture runs fn for every *.json file in dir, comparing its output with the .golden
// file beside it.
func eachFixture(t *testing.T, dir string, fn func(t *testing.T, in []byte) []byte) {
	files, err := filepath.Glob(filepath.Join("testdata", dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in testdata/%s: %v", dir, err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, strings.TrimSuffix(f, ".json")+".golden", fn(t, in))
		})
	}
}

func TestGoldenMessagesRequest(t *testing.T) {
	eachFixture(t, "messages_request", func(t *testing.T, in []byte) []byte {
		out, err := MessagesToChat(in, "upstream/model")
		if err != nil {
			t.Fatal(err)
		}
		return indent(t, out)
	})
}

func TestGoldenMessagesResponse(t *testing.T) {
	eachFixture(t, "messages_response", func(t *testing.T, in []byte) []byte {
		out, u, err := ChatToMessagesResponse(in, "client-model")
		if err != nil {
			t.Fatal(err)
		}
		return append(indent(t, out), fmt.Sprintf("# billed input=%d output=%d\n", u.InputTokens, u.OutputTokens)...)
	})
}

func TestGoldenResponsesRequest(t *testing.T) {
	eachFixture(t, "responses_request", func(t *testing.T, in []byte) []byte {
		out, err := ResponsesToChat(in, "upstream/model")
		if err != nil {
			t.Fatal(err)
		}
		return indent(t, out)
	})
}

func TestGoldenResponsesResponse(t *testing.T) {
	eachFixture(t, "responses_response", func(t *testing.T, in []byte) []byte {
		out, u, err := ChatToResponsesResponse(in, "client-model")
		if err != nil {
			t.Fatal(err)
		}
		return append(indent(t, out), fmt.Sprintf("# billed input=%d output=%d\n", u.InputTokens, u.OutputTokens)...)
	})
}

// streamer is what both stream translators provide.
type streamer interface {
	Feed([]byte) error
	Finish() error
	Usage() Usage
}

// replay feeds a recorded chat SSE stream to a translator built by mk and returns the
// translated events as SSE text, followed by comment lines on how the stream ended.
func replay(t *testing.T, sse []byte, mk func(w func(event, data []byte) error) streamer) []byte {
	t.Helper()
	var out bytes.Buffer
	s := mk(func(event, data []byte) error {
		if !json.Valid(data) {
			t.Fatalf("event %s carries invalid JSON: %s", event, data)
		}
		fmt.Fprintf(&out, "event: %s\ndata: %s\n\n", event, data)
		return nil
	})
	sc := bufio.NewScanner(bytes.NewReader(sse))
	sc.Buffer(nil, 1<<20)
	ending := "# upstream ended without [DONE]\n"
	var chunk []byte
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data:") {
			continue
		}
		data := strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
		var err error
		if data == "[DONE]" {
			err = s.Finish()
			ending = "# finished\n"
		} else {
			// One buffer for every chunk, scribbled over after each Feed, as the relay's
			// reader reuses its buffer: a translator must keep nothing pointing into it.
			chunk = append(chunk[:0], data...)
			err = s.Feed(chunk)
			for i := range chunk {
				chunk[i] = 'X'
			}
		}
		if err != nil {
			if !errors.Is(err, ErrUpstream) {
				t.Fatalf("error not wrapping ErrUpstream: %v", err)
			}
			ending = "# error: " + err.Error() + "\n"
			break
		}
	}
	u := s.Usage()
	out.WriteString(ending)
	fmt.Fprintf(&out, "# billed input=%d output=%d\n", u.InputTokens, u.OutputTokens)
	return out.Bytes()
}

func eachStream(t *testing.T, goldenDir string, mk func(w func(event, data []byte) error) streamer) {
	files, err := filepath.Glob(filepath.Join("testdata", "streams", "*.sse"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded streams: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".sse")
		t.Run(name, func(t *testing.T) {
			sse, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", goldenDir, name+".golden"), replay(t, sse, mk))
		})
	}
}

func TestGoldenMessagesStream(t *testing.T) {
	eachStream(t, "messages_stream", func(w func(event, data []byte) error) streamer {
		return NewChatToMessagesStream("client-model", w)
	})
}

func TestGoldenResponsesStream(t *testing.T) {
	eachStream(t, "responses_stream", func(w func(event, data []byte) error) streamer {
		return NewChatToResponsesStream("client-model", w)
	})
}
