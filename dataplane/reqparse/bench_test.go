package reqparse

import (
	"fmt"
	"strings"
	"testing"
)

// chatBody builds a chat body of about size bytes: a system message and alternating user and
// assistant turns whose text has newlines and quotes (escapes), as real clients send.
func chatBody(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"llama-3.1-8b","stream":true,"stream_options":{"include_usage":true},"max_tokens":512,"temperature":0.7,"messages":[`)
	b.WriteString(`{"role":"system","content":"You are a helpful assistant.\nAnswer briefly."}`)
	turn := `Tell me about \"item %d\" in a few lines.\nIt should mention the \u00e5 character.`
	for i := 0; b.Len() < size-120; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		fmt.Fprintf(&b, `,{"role":%q,"content":"`+turn+`"}`, role, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// messagesBody builds a Messages-style body of about size bytes: a system prompt and turns
// whose content alternates between a string and an array of text blocks.
func messagesBody(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"claude-x","max_tokens":512,"stream":true,"temperature":0.7,"system":"You are a helpful assistant.\nAnswer briefly.","messages":[`)
	turn := `Tell me about \"item %d\" in a few lines.\nIt should mention the \u00e5 character.`
	for i := 0; b.Len() < size-120; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		if i%2 == 0 {
			fmt.Fprintf(&b, `{"role":"user","content":[{"type":"text","text":"`+turn+`"}]}`, i)
		} else {
			fmt.Fprintf(&b, `{"role":"assistant","content":"`+turn+`"}`, i)
		}
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// responsesBody builds a Responses body of about size bytes: instructions and input items
// with input_text parts.
func responsesBody(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"llama-3.1-8b","stream":true,"max_output_tokens":512,"temperature":0.7,"instructions":"You are a helpful assistant.\nAnswer briefly.","input":[`)
	turn := `Tell me about \"item %d\" in a few lines.\nIt should mention the \u00e5 character.`
	for i := 0; b.Len() < size-120; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"role":"user","content":[{"type":"input_text","text":"`+turn+`"}]}`, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// proseBody builds a chat body of about size bytes whose messages are long runs of plain
// ASCII prose (few escapes), the string-heavy case.
func proseBody(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"llama-3.1-8b","max_tokens":512,"messages":[`)
	const sentence = "The quick brown fox jumps over the lazy dog, and then it rests. "
	para := strings.Repeat(sentence, min(30, size/2/len(sentence)))
	for i := 0; b.Len() < size-len(para)-60; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"role":"user","content":"` + para + `\n"}`)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// oneMessageBody builds a chat body of exactly size bytes with a single user message of
// plain words, the body `make bench` sends (deploy/tools/benchrun ChatBody).
func oneMessageBody(size int) []byte {
	head := `{"model":"bench-chat","max_tokens":16,"messages":[{"role":"user","content":"`
	tail := `"}]}`
	var b strings.Builder
	b.WriteString(head)
	words := []string{"hej ", "hopp ", "gateway ", "token ", "stream "}
	for i := 0; b.Len() < size-len(tail); i++ {
		w := words[i%len(words)]
		if rest := size - len(tail) - b.Len(); len(w) > rest {
			w = strings.Repeat("x", rest)
		}
		b.WriteString(w)
	}
	b.WriteString(tail)
	return []byte(b.String())
}

func benchParse(b *testing.B, endpoint string, build func(int) []byte) {
	for _, size := range []int{1 << 10, 64 << 10} {
		body := build(size)
		if _, err := Parse(endpoint, body); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := Parse(endpoint, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkParseChat(b *testing.B)       { benchParse(b, chat, chatBody) }
func BenchmarkParseMessages(b *testing.B)   { benchParse(b, msgs, messagesBody) }
func BenchmarkParseResponses(b *testing.B)  { benchParse(b, resp, responsesBody) }
func BenchmarkParseProse(b *testing.B)      { benchParse(b, chat, proseBody) }
func BenchmarkParseOneMessage(b *testing.B) { benchParse(b, chat, oneMessageBody) }

// streamEvent is a typical chat stream chunk (the data of one SSE event).
var streamEvent = []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"llama-3.1-8b","choices":[{"index":0,"delta":{"content":" world"},"finish_reason":null}]}`)

// BenchmarkValidEvent is the per-event check of a relayed stream.
func BenchmarkValidEvent(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(streamEvent)))
	for b.Loop() {
		if !ValidJSON(streamEvent) {
			b.Fatal("invalid")
		}
	}
}

func TestParseAllocs(t *testing.T) {
	for _, c := range []struct {
		endpoint string
		body     []byte
	}{{chat, chatBody(64 << 10)}, {msgs, messagesBody(64 << 10)}, {resp, responsesBody(64 << 10)}} {
		allocs := testing.AllocsPerRun(20, func() {
			if _, err := Parse(c.endpoint, c.body); err != nil {
				t.Fatal(err)
			}
		})
		// one allocation: the cloned model name
		if allocs > 1 {
			t.Errorf("Parse of a 64 KiB %s body allocates %.0f times, want at most 1", c.endpoint, allocs)
		}
	}
}
