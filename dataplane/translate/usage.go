package translate

import "github.com/tidwall/gjson"

// Usage is what an answer is billed for.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
}

// Total is InputTokens plus OutputTokens.
func (u Usage) Total() int64 { return u.InputTokens + u.OutputTokens }

// This file is the one place where upstream usage objects become billed tokens.
//
// Chat completions and Responses-style usage count cached prompt tokens inside
// prompt_tokens / input_tokens (the *_details.cached_tokens field is a subset, not an
// addition), so they are billed once, as input. Reasoning tokens are likewise inside
// completion_tokens / output_tokens. Messages-style usage is the exception: its input_tokens
// excludes cache reads and cache writes, which are reported beside it, so the three are
// added. Every token is billed at the model's input or output rate; the gateway has no
// separate cache price.

// UsageFromChat turns a chat completions (or text completions) usage object into billed
// tokens. A missing completion_tokens is derived from total_tokens. ok is false when usage
// is not an object with prompt_tokens or total_tokens (e.g. absent or null).
func UsageFromChat(usage []byte) (u Usage, ok bool) {
	return usageFromChat(gjson.ParseBytes(usage))
}

func usageFromChat(r gjson.Result) (Usage, bool) {
	if !r.IsObject() {
		return Usage{}, false
	}
	p, c, t := r.Get("prompt_tokens"), r.Get("completion_tokens"), r.Get("total_tokens")
	if !p.Exists() && !t.Exists() {
		return Usage{}, false
	}
	u := Usage{InputTokens: nonNeg(p.Int())}
	if c.Exists() {
		u.OutputTokens = nonNeg(c.Int())
	} else {
		u.OutputTokens = nonNeg(t.Int() - u.InputTokens)
	}
	return u, true
}

// UsageFromMessages turns a Messages-style usage object into billed tokens: input_tokens +
// cache_creation_input_tokens + cache_read_input_tokens, and output_tokens.
func UsageFromMessages(usage []byte) (u Usage, ok bool) {
	r := gjson.ParseBytes(usage)
	if !r.IsObject() {
		return Usage{}, false
	}
	in, out := r.Get("input_tokens"), r.Get("output_tokens")
	if !in.Exists() && !out.Exists() {
		return Usage{}, false
	}
	return Usage{
		InputTokens: nonNeg(in.Int()) + nonNeg(r.Get("cache_creation_input_tokens").Int()) +
			nonNeg(r.Get("cache_read_input_tokens").Int()),
		OutputTokens: nonNeg(out.Int()),
	}, true
}

// UsageFromResponses turns a Responses-style usage object into billed tokens: input_tokens
// (cached tokens included) and output_tokens (reasoning tokens included).
func UsageFromResponses(usage []byte) (u Usage, ok bool) {
	r := gjson.ParseBytes(usage)
	if !r.IsObject() {
		return Usage{}, false
	}
	in, out := r.Get("input_tokens"), r.Get("output_tokens")
	if !in.Exists() && !out.Exists() {
		return Usage{}, false
	}
	return Usage{InputTokens: nonNeg(in.Int()), OutputTokens: nonNeg(out.Int())}, true
}

func nonNeg(n int64) int64 { return max(n, 0) }
