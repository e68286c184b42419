package translate

import (
	"os"
	"path/filepath"
	"testing"
)

func BenchmarkMessagesToChat(b *testing.B) {
	body, err := os.ReadFile(filepath.Join("testdata", "messages_request", "tools_roundtrip.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := MessagesToChat(body, "upstream"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMessagesStreamTextChunk measures the per-chunk cost of translating a streamed
// text delta, the most frequent event of a translated stream.
func BenchmarkMessagesStreamTextChunk(b *testing.B) {
	c := []byte(`{"id":"chatcmpl-a1b2c3","object":"chat.completion.chunk","created":1763776800,"model":"qwen2.5-7b","choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,"finish_reason":null}]}`)
	s := NewChatToMessagesStream("m", func(event, data []byte) error { return nil })
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Feed(c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResponsesStreamTextChunk(b *testing.B) {
	c := []byte(`{"id":"chatcmpl-a1b2c3","object":"chat.completion.chunk","created":1763776800,"model":"qwen2.5-7b","choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,"finish_reason":null}]}`)
	s := NewChatToResponsesStream("m", func(event, data []byte) error { return nil })
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Feed(c); err != nil {
			b.Fatal(err)
		}
	}
}
