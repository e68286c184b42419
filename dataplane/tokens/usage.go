package tokens

import (
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/reqparse"
)

// Usage is what an answer is billed for.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
	// Invalid is set when a reported count was not a non-negative integer fitting int64
	// (see Count); the counts are then the ones that cannot over-charge.
	Invalid bool
}

// Total is InputTokens plus OutputTokens (saturating).
func (u Usage) Total() int64 { return Add(u.InputTokens, u.OutputTokens) }

// This file is the one place where upstream usage objects become billed tokens.
//
// Chat completions and Responses-style usage count cached prompt tokens inside
// prompt_tokens / input_tokens (the *_details.cached_tokens field is a subset, not an
// addition), so they are billed once, as input. Reasoning tokens are likewise inside
// completion_tokens / output_tokens. Messages-style usage is the exception: its input_tokens
// excludes cache reads and cache writes, which are reported beside it, so the three are
// added. Every token is billed at the model's input or output rate; the gateway has no
// separate cache price.

// FromChat turns a chat completions (or text completions, or embeddings) usage object into
// billed tokens. A missing completion_tokens is derived from total_tokens. ok is false when
// usage is not an object with prompt_tokens or total_tokens (e.g. absent or null).
func FromChat(r gjson.Result) (u Usage, ok bool) {
	if !r.IsObject() {
		return Usage{}, false
	}
	var v [3]gjson.Result
	members(r, chatKeys[:], v[:])
	p, c, t := v[0], v[1], v[2]
	if !p.Exists() && !t.Exists() {
		return Usage{}, false
	}
	var okIn, okOut bool
	u.InputTokens, okIn = Count(p)
	if c.Exists() {
		u.OutputTokens, okOut = Count(c)
	} else {
		tot, okTot := Count(t)
		okOut = okTot && tot >= u.InputTokens // a total below the prompt is impossible
		u.OutputTokens = max(tot-u.InputTokens, 0)
	}
	u.Invalid = !okIn || !okOut
	return u, true
}

// Messages accumulates Messages-style usage: input_tokens + cache_creation_input_tokens +
// cache_read_input_tokens, and output_tokens. A stream reports the input side in
// message_start and cumulative counts in message_delta; each field keeps its latest value.
type Messages struct {
	in, cacheWrite, cacheRead, out int64
	hasIn, hasOut                  bool
	invalid                        bool
}

// Update takes the fields present in usage object r.
func (m *Messages) Update(r gjson.Result) {
	if !r.IsObject() {
		return
	}
	var v [4]gjson.Result
	members(r, messagesKeys[:], v[:])
	set := func(dst *int64, v gjson.Result) bool {
		if !v.Exists() {
			return false
		}
		n, ok := Count(v)
		*dst = n
		m.invalid = m.invalid || !ok
		return true
	}
	m.hasIn = set(&m.in, v[0]) || m.hasIn
	set(&m.cacheWrite, v[1])
	set(&m.cacheRead, v[2])
	m.hasOut = set(&m.out, v[3]) || m.hasOut
}

// UpdateStart takes a message_start's usage object r: its output_tokens is a placeholder
// (servers send 0 or 1 before generating), so only the input side is taken; output
// counts once a message_delta reports it (Update).
func (m *Messages) UpdateStart(r gjson.Result) {
	hasOut, out := m.hasOut, m.out
	m.Update(r)
	m.hasOut, m.out = hasOut, out
}

// Reported says which sides were reported so far.
func (m *Messages) Reported() (in, out bool) { return m.hasIn, m.hasOut }

// Billed returns the billed tokens.
func (m *Messages) Billed() Usage {
	return Usage{InputTokens: Add(Add(m.in, m.cacheWrite), m.cacheRead), OutputTokens: m.out, Invalid: m.invalid}
}

// FromMessages turns a Messages-style usage object into billed tokens.
func FromMessages(r gjson.Result) (u Usage, ok bool) {
	var m Messages
	if m.Update(r); !m.hasIn && !m.hasOut {
		return Usage{}, false
	}
	return m.Billed(), true
}

// FromResponses turns a Responses-style (or decision-model) usage object into billed
// tokens: input_tokens (cached tokens included) and output_tokens (reasoning included).
func FromResponses(r gjson.Result) (u Usage, ok bool) {
	if !r.IsObject() {
		return Usage{}, false
	}
	var v [2]gjson.Result
	members(r, responsesKeys[:], v[:])
	in, out := v[0], v[1]
	if !in.Exists() && !out.Exists() {
		return Usage{}, false
	}
	var okIn, okOut bool
	u.InputTokens, okIn = Count(in)
	u.OutputTokens, okOut = Count(out)
	u.Invalid = !okIn || !okOut
	return u, true
}

// FromEndpoint reads the usage object of an answer of endpoint e in e's protocol.
// Embeddings bill input tokens only.
func FromEndpoint(e index.Endpoint, r gjson.Result) (Usage, bool) {
	switch e {
	case index.EPChat, index.EPCompletions:
		return FromChat(r)
	case index.EPEmbeddings:
		u, ok := FromChat(r)
		u.OutputTokens = 0
		return u, ok
	case index.EPMessages:
		return FromMessages(r)
	case index.EPResponses, index.EPSystemOne:
		return FromResponses(r)
	}
	return Usage{}, false
}

// FromBody reads the usage of a complete (non-streaming) answer body of endpoint e. m is
// what reqparse.ScanEvent noted of body (nil: nothing): with it only the usage member is
// parsed, not the answer again; without it, where the notes cannot tell (an escaped key,
// many members) or when body is not an object from its first byte, gjson reads the answer
// for its usage. It does not copy body (gjson.GetBytes would): the result does not outlive
// the call.
func FromBody(e index.Endpoint, body []byte, m *reqparse.EventMembers) (Usage, bool) {
	if m != nil && len(body) > 0 && body[0] == '{' {
		u, found, known := m.Member(body, "usage")
		switch {
		case known && !found:
			return FromEndpoint(e, gjson.Result{})
		case known:
			return FromEndpoint(e, gjson.Parse(unsafe.String(unsafe.SliceData(u), len(u))))
		}
	}
	return FromEndpoint(e, gjson.Get(unsafe.String(unsafe.SliceData(body), len(body)), "usage"))
}

// The members each protocol's usage object is read for, in the order members returns them.
var (
	chatKeys      = [...]string{"prompt_tokens", "completion_tokens", "total_tokens"}
	messagesKeys  = [...]string{"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"}
	responsesKeys = [...]string{"input_tokens", "output_tokens"}
)

// members reads object r once and sets out[i] to what r.Get(keys[i]) returns: the value of
// the first member named keys[i] (names compared unescaped), or nothing. One pass instead of
// a search per key.
func members(r gjson.Result, keys []string, out []gjson.Result) {
	left := len(keys)
	r.ForEach(func(k, v gjson.Result) bool {
		for i, name := range keys {
			if k.Str == name && !out[i].Exists() {
				out[i] = v
				left--
				break
			}
		}
		return left > 0
	})
}
