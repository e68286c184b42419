// Allocation counts mean nothing under -race: this file is built without it only.

//go:build !race

package proxy

import "testing"

// chatAnswer is a plain chat completion: no reasoning, a standard finish reason.
var chatAnswer = []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hej!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`)

var tgiStop = []string{"stop_sequence", "eos_token"}

// normalizeChat is what a passed-through chat answer goes through.
func normalizeChat(b []byte) []byte {
	out, _ := MirrorReasoning(nil, b, "message")
	out, _ = NormalizeFinish(nil, out, tgiStop)
	return out
}

// TestNormalizeUnchangedAllocationFree: an answer with nothing to normalize is read, not
// copied.
func TestNormalizeUnchangedAllocationFree(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() {
		if len(normalizeChat(chatAnswer)) != len(chatAnswer) {
			t.Fatal("changed")
		}
	}); n != 0 {
		t.Fatalf("%.1f allocations", n)
	}
}

func BenchmarkNormalizeChat(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if len(normalizeChat(chatAnswer)) != len(chatAnswer) {
			b.Fatal("changed")
		}
	}
}
