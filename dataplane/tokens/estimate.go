package tokens

import (
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/index"
)

// OutputBytesPerToken is the default divisor of the delivered-output estimate (a model's
// catalogue entry may set its own, output_bytes_per_token): the UTF-8 bytes of generated
// text the client received, divided by 8. It is deliberately high: tokenizers of
// open-weight models average about 4 to 4.7 bytes per token on English text and fewer on
// code and on most other languages (Swedish and German about 3.5), so the estimate stays
// below what an honest server counts, and a record that charges the larger of the two
// charges an honest server's count. A server that under-reports is charged at least this.
const OutputBytesPerToken = 8

// Delivered is the generated output a client received: Pieces, the events (or a choice of
// a chunk, or a whole answer's text) that carried any, and Bytes, the UTF-8 bytes of their
// text. Each piece holds at least one token (a server emits no empty output), and the
// bytes at most OutputBytesPerToken per token, so Tokens is a low estimate of the tokens
// delivered.
type Delivered struct {
	Pieces, Bytes int64
}

// Add returns d with o added.
func (d Delivered) Add(o Delivered) Delivered {
	return Delivered{Pieces: Add(d.Pieces, o.Pieces), Bytes: Add(d.Bytes, o.Bytes)}
}

// Tokens is the delivered output in tokens: the larger of the pieces and the bytes divided
// by bytesPerToken (a model's output_bytes_per_token; 0: OutputBytesPerToken).
func (d Delivered) Tokens(bytesPerToken int) int64 {
	bpt := int64(bytesPerToken)
	if bpt <= 0 {
		bpt = OutputBytesPerToken
	}
	return max(d.Pieces, d.Bytes/bpt)
}

// HoldBytesPerToken is the divisor of the high estimate (Holds): fewer bytes per token
// than tokenizers average on English text.
const HoldBytesPerToken = 4

// Holds is a high estimate of the tokens d holds: what a server's own count of it is
// trusted up to where nothing else bounds it (an answer past the request's bound that the
// server says it generated).
func (d Delivered) Holds() int64 { return max(d.Pieces, d.Bytes/HoldBytesPerToken) }

// DeliveredAnswer is the generated output of a complete answer of endpoint e: every
// string a client reads as output, in every member that carries it, duplicates included
// (a JSON client keeps a duplicated member's last value; summing every value can only
// count more). Per protocol:
//   - chat: each choice's message (content, reasoning, refusal, tool-call names and
//     arguments, and any other text in it; role, IDs, types and annotations aside);
//   - text completions: each choice's text;
//   - Messages: each content block (text, thinking, tool name and input; signatures,
//     redacted data and IDs aside);
//   - Responses: each output item (text, refusals, reasoning text and summaries, call
//     names and arguments; IDs, statuses, signatures and encrypted content aside).
//
// Each choice, block or item with text is a piece. A tool's name counts as NameBytes.
func DeliveredAnswer(e index.Endpoint, body []byte) Delivered {
	root := gjson.Parse(unsafe.String(unsafe.SliceData(body), len(body)))
	if !root.IsObject() {
		return Delivered{}
	}
	var d Delivered
	root.ForEach(func(k, v gjson.Result) bool {
		switch {
		case (e == index.EPChat || e == index.EPCompletions) && k.Str == "choices":
			eachElement(v, func(c gjson.Result) {
				c.ForEach(func(k, v gjson.Result) bool {
					if e == index.EPChat && (k.Str == "message" || k.Str == "delta") || e == index.EPCompletions && k.Str == "text" {
						d = d.Add(piece(v))
					}
					return true
				})
			})
		case e == index.EPMessages && k.Str == "content", e == index.EPResponses && k.Str == "output":
			eachElement(v, func(c gjson.Result) { d = d.Add(piece(c)) })
		}
		return true
	})
	return d
}

// piece is v's text as one piece (none when it has no text).
func piece(v gjson.Result) Delivered {
	n := TextBytes(v)
	if n == 0 {
		return Delivered{}
	}
	return Delivered{Pieces: 1, Bytes: n}
}

// eachElement calls f with each element of the array v (nothing when v is not an array).
func eachElement(v gjson.Result, f func(gjson.Result)) {
	if !v.IsArray() {
		return
	}
	v.ForEach(func(_, e gjson.Result) bool { f(e); return true })
}

// TextBytes is the UTF-8 bytes of the generated text in v: a string's decoded length; in
// an object, the sum over every member (a duplicated member's every value) but those
// that carry no generated text (notText), a tool's input given as an object counting its
// whole JSON; in an array, the sum over its elements. A
// chat message's reasoning, often sent under both of its names (reasoning and
// reasoning_content) with the same text, counts once, under the longer name's value.
func TextBytes(v gjson.Result) int64 {
	switch {
	case v.Type == gjson.String:
		return int64(len(v.Str))
	case v.IsArray():
		var n int64
		v.ForEach(func(_, e gjson.Result) bool { n = Add(n, TextBytes(e)); return true })
		return n
	case v.IsObject():
		var n, reasoning, reasoningContent int64
		v.ForEach(func(k, e gjson.Result) bool {
			switch {
			case NotText(k.Str):
			case k.Str == "name" && e.Type == gjson.String:
				n = Add(n, NameBytes(int64(len(e.Str))))
			case k.Str == "input" || k.Str == "arguments" || k.Str == "partial_json":
				n = Add(n, ArgValueBytes(e))
			case k.Str == "reasoning":
				reasoning = Add(reasoning, TextBytes(e))
			case k.Str == "reasoning_content":
				reasoningContent = Add(reasoningContent, TextBytes(e))
			default:
				n = Add(n, TextBytes(e))
			}
			return true
		})
		return Add(n, max(reasoning, reasoningContent))
	}
	return 0
}

// ArgValueBytes is the bytes of a tool's arguments or input, given as a string of JSON or
// as JSON (ArgBytes); an empty object or array (a block's start, before its input
// streams) counts nothing.
func ArgValueBytes(v gjson.Result) int64 {
	if v.Type == gjson.String {
		return ArgBytes(v.Str)
	}
	if !v.IsObject() && !v.IsArray() {
		return TextBytes(v)
	}
	empty := true
	v.ForEach(func(_, _ gjson.Result) bool { empty = false; return false })
	if empty {
		return 0
	}
	return ArgBytes(v.Raw)
}

// ArgBytes is the bytes of a tool's arguments (JSON text) that count as generated text:
// all but JSON's punctuation and whitespace, which tokenizers merge into the tokens
// beside them ({", ": ", "}), so that the estimate stays low on arguments as on text.
func ArgBytes(s string) int64 {
	var n int64
	for i := 0; i < len(s); i++ {
		if !IsJSONPunct(s[i]) {
			n++
		}
	}
	return n
}

// IsJSONPunct reports whether c is JSON punctuation or whitespace (ArgBytes).
func IsJSONPunct(c byte) bool {
	switch c {
	case '{', '}', '[', ']', '"', ':', ',', ' ', '\t', '\n', '\r', '\\':
		return true
	}
	return false
}

// MaxNameBytes is the longest function name the OpenAI protocol allows (64 characters).
const MaxNameBytes = 64

// NameBytes is the bytes a tool or function name of n bytes counts as generated text: the
// name comes from the request's tools, so a name of up to MaxNameBytes counts nothing,
// and a longer one (no client's tool) counts in full.
func NameBytes(n int64) int64 {
	if n <= MaxNameBytes {
		return 0
	}
	return n
}

// NotText reports whether a member of this name carries no generated text: identifiers,
// types, statuses and roles; opaque data (signatures, encrypted or redacted content);
// echoes of the request (a stop sequence); usage; and per-token detail (logprobs, which
// repeat the text).
func NotText(name string) bool {
	switch name {
	case "id", "type", "role", "status", "index", "object", "call_id", "item_id", "tool_call_id", "model",
		"finish_reason", "stop_reason", "stop_sequence", "matched_stop", "signature", "encrypted_content", "data",
		"logprobs", "top_logprobs", "annotations", "obfuscation", "usage", "service_tier", "sequence_number",
		"output_index", "content_index", "summary_index":
		return true
	}
	return false
}
