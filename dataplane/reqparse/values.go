package reqparse

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sekgate/gateway/shared/apierror"
)

// Strict values. Model servers are mostly Python: json.loads turns 1e999 into inf, a lone
// \ud800 into a str that breaks their tokenizers, and invalid UTF-8 is replaced or refused
// differently by every server. The gateway forwards only text that is valid Unicode and
// numbers that are finite, anywhere in the body (unknown fields included), and names the
// first offending param.
//
// The checks cost one pass over the body on the happy path: utf8.ValidString over the raw
// bytes (gjson.Valid has already refused control characters and bad escapes, and JSON
// outside strings is ASCII, so this covers string contents and key names alike), a scan of
// the backslashes only when there are any, and the number check folded into the nesting
// scan (see structure).

// textCheck returns the offset of the first text in s that is not valid Unicode (invalid
// UTF-8, or a \u escape that is a lone surrogate) and what is wrong with it, or -1. s must
// be valid JSON.
func textCheck(s string) (int, string) {
	if !utf8.ValidString(s) {
		for i := 0; i < len(s); {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n <= 1 {
				return i, "text must be valid UTF-8"
			}
			i += n
		}
	}
	i := strings.IndexByte(s, '\\')
	for i >= 0 && i+1 < len(s) {
		// In valid JSON a backslash only starts an escape inside a string.
		if s[i+1] != 'u' || i+6 > len(s) {
			i += 2
		} else {
			r := hex4(s[i+2 : i+6])
			switch {
			case r >= 0xD800 && r < 0xDC00:
				if i+12 > len(s) || s[i+6] != '\\' || s[i+7] != 'u' {
					return i, "a \\u escape is a lone high surrogate; text must be valid Unicode"
				}
				if lo := hex4(s[i+8 : i+12]); lo < 0xDC00 || lo > 0xDFFF {
					return i, "a \\u escape is a lone high surrogate; text must be valid Unicode"
				}
				i += 12
			case r >= 0xDC00 && r <= 0xDFFF:
				return i, "a \\u escape is a lone low surrogate; text must be valid Unicode"
			default:
				i += 6
			}
		}
		k := strings.IndexByte(s[i:], '\\')
		if k < 0 {
			break
		}
		i += k
	}
	return -1, ""
}

// structure scans s once, skipping string contents: ok reports whether it nests at most
// MaxDepth deep, and inf is the offset of the first number literal too large for a float64
// (1e999, or 400 digits), else -1. s need not be valid JSON; an invalid literal is left to
// the validator.
func structure(s string) (ok bool, inf int) {
	depth, run := 0, 0
	inf = -1
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= '0' && c <= '9' {
			// Only a literal with an exponent or with hundreds of digits can overflow.
			run++
			if run == 300 && inf < 0 && !finiteAt(s, i) {
				inf = numberStart(s, i)
			}
			continue
		}
		run = 0
		switch c {
		case '"':
			i = stringEnd(s, i) - 1
		case '{', '[':
			depth++
			if depth > MaxDepth {
				return false, inf
			}
		case '}', ']':
			depth--
		case 'e', 'E':
			if inf < 0 && i > 0 && (s[i-1] >= '0' && s[i-1] <= '9' || s[i-1] == '.') && !finiteAt(s, i) {
				inf = numberStart(s, i)
			}
		}
	}
	return true, inf
}

func isNumByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E'
}

// numberStart returns the start of the number literal around s[i].
func numberStart(s string, i int) int {
	for i > 0 && isNumByte(s[i-1]) {
		i--
	}
	return i
}

// finiteAt reports whether the number literal around s[i] is a finite float64 (true for
// literals that are not numbers at all: the validator judges those).
func finiteAt(s string, i int) bool {
	start, end := numberStart(s, i), i
	for end < len(s) && isNumByte(s[end]) {
		end++
	}
	f, err := strconv.ParseFloat(s[start:end], 64)
	return err == nil || !math.IsInf(f, 0)
}

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

// checkValues applies the strict-value rules to the valid JSON body s whose first
// non-finite number (from structure) is at inf.
func checkValues(s string, inf int) *apierror.Error {
	off, why := textCheck(s)
	if inf >= 0 && (off < 0 || inf < off) {
		off, why = inf, "numbers must be finite: this one is outside the range of a 64-bit float"
	}
	if off < 0 {
		return nil
	}
	p := pathAt(s, off)
	if p == "" {
		return bad("", why)
	}
	return bad(p, p+": "+why)
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
