// Package tokens owns the billed tokens of an answer: it reads the usage a provider reports in
// each protocol, whole or streamed (usage.go), bounds it by what the request made possible,
// and estimates what a cut stream is charged (estimate.go). A model server is not a trusted party: its usage is input, and a
// count outside the bounds makes its answer invalid.
//
// Reading is strict (Count): a count is a JSON number written as a non-negative integer that
// fits int64. Anything else (a negative number, a fraction or exponent such as 12.5 or
// 1e999, a string, a bool) is invalid; it still yields the nearest count that cannot
// over-charge: 0 for negatives, strings and other types, the integer part of a fraction,
// and math.MaxInt64 for a number too large for int64 (which then exceeds every bound).
//
// Bounding (Bounds.Check) is the one place where reported counts meet the request: prompt
// tokens within the model's context window (times the number of inputs for embeddings,
// whose inputs are embedded one by one), output tokens within the request's output limit or,
// without one, the window. Out-of-bounds counts are replaced by the bound.
package tokens

import (
	"math"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/shared/usage"
)

// DefaultWindow is the context window assumed for a model whose catalogue entry has no
// context_tokens (0, unknown): 1,048,576 tokens, above every open-weight model the gateway
// is meant to front with its full window in use. Set context_tokens to bound usage tighter.
const DefaultWindow int64 = 1 << 20

// Count reads one reported token count. ok is false when v is not a non-negative integer
// fitting int64; n is then the count that cannot over-charge (see the package comment).
// A missing or null value is 0 and ok.
func Count(v gjson.Result) (n int64, ok bool) {
	switch v.Type {
	case gjson.Null: // absent, or null (servers send null for counts they do not track)
		return 0, true
	case gjson.Number:
	default:
		return 0, false
	}
	raw := v.Raw
	digits := len(raw) > 0
	for i := 0; i < len(raw); i++ {
		if raw[i] < '0' || raw[i] > '9' {
			digits = false
			break
		}
	}
	if digits {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return math.MaxInt64, false // too large for int64
		}
		return n, true
	}
	f := v.Num
	switch {
	case math.IsNaN(f) || f <= 0:
		return 0, false
	case f >= math.MaxInt64:
		return math.MaxInt64, false
	}
	return int64(f), false
}

// Add adds two counts, saturating at math.MaxInt64 (counts are never negative).
func Add(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Bounds are the most tokens an answer to one request can have used.
type Bounds struct {
	Prompt int64 // prompt (input) tokens
	Output int64 // output tokens
}

// NewBounds returns the bounds of a request to a model whose context window is window
// (0 or less: DefaultWindow). maxOutput is the request's output limit (max_tokens,
// max_completion_tokens, max_output_tokens; 0 when not set). inputs is the number of
// separately processed inputs (embedding inputs, decision-model questions; 0 or 1 for a
// single prompt).
func NewBounds(window, maxOutput int64, inputs int) Bounds {
	if window <= 0 {
		window = DefaultWindow
	}
	b := Bounds{Prompt: window, Output: window}
	if maxOutput > 0 && maxOutput < window {
		b.Output = maxOutput
	}
	if inputs > 1 {
		if int64(inputs) > math.MaxInt64/window {
			b.Prompt = math.MaxInt64
		} else {
			b.Prompt = window * int64(inputs)
		}
	}
	// A record holds at most usage.MaxRecordTokens of each (the control plane refuses more);
	// a prompt within the body limit never comes near it.
	b.Prompt = min(b.Prompt, usage.MaxRecordTokens)
	return b
}

// WithChoices returns b for a request generating n completions (chat and text completions'
// n, best_of): each may use the output limit.
func (b Bounds) WithChoices(n int64) Bounds {
	if n > 1 {
		if b.Output > math.MaxInt64/n {
			b.Output = math.MaxInt64
		} else {
			b.Output *= n
		}
	}
	return b
}

// Check bounds reported counts: it returns them unchanged and true when they are within b,
// else each replaced by min(count, bound) and false. The zero Bounds check nothing.
func (b Bounds) Check(in, out int64) (int64, int64, bool) {
	if b == (Bounds{}) {
		return max(in, 0), max(out, 0), in >= 0 && out >= 0
	}
	ok := in >= 0 && out >= 0 && in <= b.Prompt && out <= b.Output
	return min(max(in, 0), b.Prompt), min(max(out, 0), b.Output), ok
}
