package translate

import (
	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/tokens"
)

// Usage is what an answer is billed for. Reading usage objects (strictly: see
// tokens.Count) and bounding them is dataplane/tokens' job; these wrappers keep the
// translators' API.
type Usage = tokens.Usage

// UsageFromChat turns a chat completions (or text completions) usage object into billed
// tokens (tokens.FromChat).
func UsageFromChat(usage []byte) (u Usage, ok bool) {
	return tokens.FromChat(gjson.ParseBytes(usage))
}

func usageFromChat(r gjson.Result) (Usage, bool) { return tokens.FromChat(r) }

// UsageFromMessages turns a Messages-style usage object into billed tokens: input_tokens +
// cache_creation_input_tokens + cache_read_input_tokens, and output_tokens.
func UsageFromMessages(usage []byte) (u Usage, ok bool) {
	return tokens.FromMessages(gjson.ParseBytes(usage))
}

// UsageFromResponses turns a Responses-style usage object into billed tokens: input_tokens
// (cached tokens included) and output_tokens (reasoning tokens included).
func UsageFromResponses(usage []byte) (u Usage, ok bool) {
	return tokens.FromResponses(gjson.ParseBytes(usage))
}

// detailCount reads a usage detail that is shown, not billed (cached or reasoning tokens).
func detailCount(r gjson.Result) int64 { n, _ := tokens.Count(r); return n }
