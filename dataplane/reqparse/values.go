package reqparse

import (
	"math"
	"strconv"
	"strings"

	"github.com/sekgate/gateway/shared/apierror"
)

// Strict values. Model servers are mostly Python: json.loads turns 1e999 into inf, a lone
// \ud800 into a str that breaks their tokenizers, and invalid UTF-8 is replaced or refused
// differently by every server. The gateway forwards only text that is valid Unicode and
// numbers that are finite, anywhere in the body (unknown fields included), and names the
// first offending param.
//
// The checks are part of the one validating scan of the body (scan.go): UTF-8 and \u escapes
// are checked as string contents and key names are read, and a number literal is checked
// when it has an exponent or 300 integer digits (no other literal can overflow).

// pathAt returns the param name (messages[0].content, questions.q1) of the innermost value
// or key of the valid JSON text s that contains offset off: for an offset in a key, the
// key's own path. Error paths only: it allocates.
func pathAt(s string, off int) string {
	var b []byte
	i := skipWS(s, 0)
	for depth := 0; depth <= MaxDepth && i < len(s); depth++ {
		switch s[i] {
		case '{':
			j, found := i+1, false
			for !found {
				j = skipWS(s, j)
				if j >= len(s) || s[j] == '}' {
					return string(b)
				}
				if s[j] == ',' {
					j++
					continue
				}
				ke := stringEnd(s, j)
				key := strings.ToValidUTF8(str(s[j:ke]), "\uFFFD")
				if len(b) > 0 {
					b = append(b, '.')
				}
				b = append(b, key...)
				if off < ke {
					return string(b)
				}
				j = skipWS(s, ke)
				if j < len(s) && s[j] == ':' {
					j++
				}
				j = skipWS(s, j)
				ve := valueEnd(s, j)
				if ve <= j {
					return string(b) // not reached on valid JSON
				}
				if off < ve {
					i, found = j, true
					break
				}
				b = b[:len(b)-len(key)]
				if len(b) > 0 {
					b = b[:len(b)-1]
				}
				j = ve
			}
		case '[':
			j, n, found := i+1, 0, false
			for !found {
				j = skipWS(s, j)
				if j >= len(s) || s[j] == ']' {
					return string(b)
				}
				if s[j] == ',' {
					j++
					continue
				}
				ve := valueEnd(s, j)
				if ve <= j {
					return string(b) // not reached on valid JSON
				}
				if off < ve {
					b = append(b, '[')
					b = strconv.AppendInt(b, int64(n), 10)
					b = append(b, ']')
					i, found = j, true
					break
				}
				n++
				j = ve
			}
		default:
			return string(b)
		}
	}
	return string(b)
}

// Numeric bounds where the interface gives only a minimum (documented in the OpenAPI
// document): token and dimension counts must fit a signed 32-bit integer, as the C++ and
// Rust servers store them; chat n is at most 128 (OpenAI's own limit).
const (
	MaxCount       = math.MaxInt32
	MaxChatChoices = 128
)

// Sampling ranges (OpenAI's and Anthropic's documented ranges).
const (
	MaxTemperature         = 2.0 // OpenAI-style endpoints
	MaxTemperatureMessages = 1.0 // Messages-style
)

// optRange checks an optional number in [lo, hi].
func optRange(param, v string, lo, hi float64) *apierror.Error {
	if !given(v) {
		return nil
	}
	if kindOf(v) == kNumber {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= lo && f <= hi {
			return nil
		}
	}
	return bad(param, param+" must be a number from "+strconv.FormatFloat(lo, 'g', -1, 64)+
		" to "+strconv.FormatFloat(hi, 'g', -1, 64))
}

// optIntRange checks an optional integer in [lo, hi] and returns it (0 when absent).
func optIntRange(param, v string, lo, hi int64) (int64, *apierror.Error) {
	if !given(v) {
		return 0, nil
	}
	n, ok := asInt(v)
	if !ok || n < lo || n > hi {
		return 0, bad(param, param+" must be an integer from "+strconv.FormatInt(lo, 10)+" to "+strconv.FormatInt(hi, 10))
	}
	return n, nil
}
