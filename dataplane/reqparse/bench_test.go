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

func BenchmarkParseChat(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10} {
		body := chatBody(size)
		if _, err := Parse(chat, body); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := Parse(chat, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestParseAllocs(t *testing.T) {
	body := chatBody(64 << 10)
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := Parse(chat, body); err != nil {
			t.Fatal(err)
		}
	})
	// one allocation: the cloned model name
	if allocs > 1 {
		t.Fatalf("Parse of a 64 KiB chat body allocates %.0f times, want at most 1", allocs)
	}
}
