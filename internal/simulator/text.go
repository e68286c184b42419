package simulator

import (
	"strings"

	"github.com/tidwall/gjson"
)

// Token counting rule (documented in the package comment): a token is one run of
// non-whitespace bytes, i.e. len(strings.Fields(text)). Generated output is made of words, one
// token each, and every streamed text delta carries exactly one token.

// CountTokens returns the simulator's token count of text: its whitespace-separated words.
func CountTokens(text string) int {
	n, inWord := 0, false
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case ' ', '\t', '\n', '\r', '\v', '\f':
			inWord = false
		default:
			if !inWord {
				n++
				inWord = true
			}
		}
	}
	return n
}

// countContent counts the tokens of a message content value: a string, or an array of parts
// whose "text" (or, for tool results, nested "content"/"output") strings are counted.
func countContent(v gjson.Result) int {
	switch {
	case v.Type == gjson.String:
		return CountTokens(v.Str)
	case v.IsArray():
		n := 0
		v.ForEach(func(_, part gjson.Result) bool {
			if part.Type == gjson.String {
				n += CountTokens(part.Str)
				return true
			}
			if t := part.Get("text"); t.Type == gjson.String {
				n += CountTokens(t.Str)
			}
			if c := part.Get("content"); c.Exists() {
				n += countContent(c)
			}
			if o := part.Get("output"); o.Exists() {
				n += countContent(o)
			}
			return true
		})
		return n
	}
	return 0
}

// contentText returns the concatenated text of a content value (string or parts).
func contentText(v gjson.Result) string {
	if v.Type == gjson.String {
		return v.Str
	}
	if !v.IsArray() {
		return ""
	}
	var sb strings.Builder
	v.ForEach(func(_, part gjson.Result) bool {
		if t := part.Get("text"); t.Type == gjson.String {
			if sb.Len() > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(t.Str)
		}
		return true
	})
	return sb.String()
}

// vocabulary of generated answers; each entry is one token.
var vocabulary = [...]string{
	"the", "gateway", "routes", "requests", "to", "models", "in", "Sweden", "and", "the",
	"EU", "under", "a", "residency", "policy", "simulated", "answer", "tokens", "stream",
	"quickly", "every", "provider", "keeps", "its", "promise", "of", "low", "latency",
	"while", "usage", "is", "metered", "exactly", "per", "account", "with", "integer",
	"prices", "this", "text", "comes", "from", "a", "deterministic", "generator", "seeded",
	"by", "prompt", "so", "tests", "can", "predict", "it", "byte", "for", "byte", "model",
	"server", "replies", "politely", "today", "again", "here", "now",
}

// hash64 is FNV-1a over s.
func hash64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// splitmix64 advances x and returns the next pseudo-random value.
func splitmix64(x *uint64) uint64 {
	*x += 0x9e3779b97f4a7c15
	z := *x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// word returns the i-th generated word for a prompt seed.
func word(seed uint64, i int) string {
	x := seed + uint64(i)*0x9e3779b97f4a7c15
	return vocabulary[splitmix64(&x)%uint64(len(vocabulary))]
}

// appendWords appends n generated words separated by single spaces.
func appendWords(b []byte, seed uint64, n int) []byte {
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, word(seed, i)...)
	}
	return b
}

// GenerateText returns the n-token answer the simulator gives to prompt: n words chosen by a
// hash of the prompt text. Exported so tests elsewhere can predict answers.
func GenerateText(prompt string, n int) string {
	return string(appendWords(nil, hash64(prompt), n))
}

// streamPiece is the i-th streamed delta: the word, with a leading space after the first.
func streamPiece(b []byte, seed uint64, i int) []byte {
	if i > 0 {
		b = append(b, ' ')
	}
	return append(b, word(seed, i)...)
}

// splitFragments splits s after each run of whitespace, keeping the whitespace with the
// preceding fragment, so the fragments concatenate back to s and each holds one token.
func splitFragments(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if (s[i] == ' ') && i+1 < len(s) && s[i+1] != ' ' {
			out = append(out, s[start:i+1])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
