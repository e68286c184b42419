package tokens

import (
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/index"
)

// BytesPerToken is the divisor of the output estimate: deliberately high (English runs
// about 4 to 4.7 bytes per token, code and most other languages fewer), so that an
// estimate stays below the true count, as reqparse's prompt estimate does.
const BytesPerToken = 5

// outputText lists, per protocol, where a complete answer carries generated text.
var outputText = map[index.Endpoint][]string{
	index.EPChat: {"choices.#.message.content", "choices.#.message.reasoning_content",
		"choices.#.message.refusal", "choices.#.message.tool_calls.#.function.arguments"},
	index.EPCompletions: {"choices.#.text"},
	index.EPMessages:    {"content.#.text", "content.#.thinking", "content.#.input"},
	index.EPResponses:   {"output.#.content.#.text", "output.#.arguments"},
}

// EstimateOutput is a low estimate of the output tokens of a complete answer of endpoint e
// that reported no usage: the UTF-8 bytes of its generated text (message content,
// reasoning, refusals, tool-call arguments) divided by BytesPerToken. Endpoints that
// generate no text (embeddings, the decision model) estimate 0.
func EstimateOutput(e index.Endpoint, body []byte) int64 {
	paths := outputText[e]
	if len(paths) == 0 {
		return 0
	}
	s := unsafe.String(unsafe.SliceData(body), len(body))
	var n int64
	for _, p := range paths {
		n += textBytes(gjson.Get(s, p))
	}
	return n / BytesPerToken
}

// textBytes sums the lengths of the strings in r (nested arrays walked; a non-string
// value, such as a tool's input object, counts its JSON length).
func textBytes(r gjson.Result) int64 {
	switch {
	case r.IsArray():
		var n int64
		r.ForEach(func(_, v gjson.Result) bool { n += textBytes(v); return true })
		return n
	case r.Type == gjson.String:
		return int64(len(r.Str))
	case r.IsObject():
		return int64(len(r.Raw))
	}
	return 0
}
