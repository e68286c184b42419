package reqparse

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/shared/apierror"
)

// The validation before scan.go, kept as the reference the differential tests hold the
// scan to: a nesting scan that also finds non-finite numbers, gjson.Valid, then UTF-8 over
// the raw bytes and a scan of the \u escapes.

// refFront is what Parse did before its field walk: the refusal, or nil for a valid object.
func refFront(s string) *apierror.Error {
	depthOK, inf := refStructure(s)
	if !depthOK {
		return apierror.InvalidParam("", "request body nests deeper than "+strconv.Itoa(MaxDepth)+" levels")
	}
	if !gjson.Valid(s) {
		return apierror.InvalidParam("", "request body is not valid JSON")
	}
	if kindOf(s[skipWS(s, 0):]) != kObject {
		return apierror.InvalidParam("", "request body must be a JSON object")
	}
	return refCheckValues(s, inf)
}

// refValidJSON is ValidJSON before scan.go.
func refValidJSON(s string) bool {
	ok, _ := refStructure(s)
	return ok && gjson.Valid(s)
}

// refTextCheck returns the offset of the first text in s that is not valid Unicode (invalid
// UTF-8, or a \u escape that is a lone surrogate) and what is wrong with it, or -1. s must
// be valid JSON.
func refTextCheck(s string) (int, string) {
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
func refStructure(s string) (ok bool, inf int) {
	depth, run := 0, 0
	inf = -1
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= '0' && c <= '9' {
			// Only a literal with an exponent or with hundreds of digits can overflow.
			run++
			if run == 300 && inf < 0 && !refFiniteAt(s, i) {
				inf = refNumberStart(s, i)
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
			if inf < 0 && i > 0 && (s[i-1] >= '0' && s[i-1] <= '9' || s[i-1] == '.') && !refFiniteAt(s, i) {
				inf = refNumberStart(s, i)
			}
		}
	}
	return true, inf
}

func refIsNumByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E'
}

// refNumberStart returns the start of the number literal around s[i].
func refNumberStart(s string, i int) int {
	for i > 0 && refIsNumByte(s[i-1]) {
		i--
	}
	return i
}

// refFiniteAt reports whether the number literal around s[i] is a finite float64 (true for
// literals that are not numbers at all: the validator judges those).
func refFiniteAt(s string, i int) bool {
	start, end := refNumberStart(s, i), i
	for end < len(s) && refIsNumByte(s[end]) {
		end++
	}
	f, err := strconv.ParseFloat(s[start:end], 64)
	return err == nil || !math.IsInf(f, 0)
}

// refCheckValues applies the strict-value rules to the valid JSON body s whose first
// non-finite number (from structure) is at inf.
func refCheckValues(s string, inf int) *apierror.Error {
	off, why := refTextCheck(s)
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

// refStringEnd is stringEnd before it read eight bytes at a time: it returns the index just past the string literal starting at s[i] == '"', or
// len(s) when it is not terminated.
func refStringEnd(s string, i int) int {
	j := i + 1
	for j < len(s) {
		k := strings.IndexByte(s[j:], '"')
		if k < 0 {
			return len(s)
		}
		j += k
		n := 0
		for p := j - 1; p > i && s[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		j++
	}
	return len(s)
}
