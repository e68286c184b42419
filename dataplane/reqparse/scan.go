package reqparse

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sekgate/gateway/shared/apierror"
)

// The validating scan: one pass over the body checks the JSON grammar (exactly gjson.Valid's:
// RFC 8259 with the whitespace " \t\n\r", any byte from 0x20 up inside strings), the nesting
// depth, and, in a strict scan, the strict values of values.go: UTF-8, lone surrogates and
// numbers too large for a float64. It replaces four passes (nesting, gjson.Valid, UTF-8 over
// the raw bytes, escapes) and keeps their answers: where the old passes reported the first
// offending offset, the scan reports the same one (the differential fuzz target in
// scan_test.go holds it to the old code, kept in reference_test.go).
//
// String contents, most of a request body, are read eight bytes at a time: a word with no
// quote, backslash, control or non-ASCII byte is skipped in a few instructions.

// scanResult is what a scan found. The offsets are -1 when there is nothing to report, and
// are only filled in by a strict scan of a body that is valid JSON.
type scanResult struct {
	ok      bool   // one JSON value (gjson's grammar), nested at most MaxDepth deep
	object  bool   // the value is an object (meaningful when ok)
	badUTF8 int    // first byte that is not valid UTF-8
	surr    int    // first \u escape that is a lone surrogate
	surrWhy string // what is wrong with it
	inf     int    // start of the first number literal outside the float64 range
}

// members is where the members of a body's object are, as a scan noted them, so that the
// field walk need not walk the whole body again to find them: n of them, -1 when there
// are more than maxTop.
type members struct {
	n  int
	at [maxTop]member
}

// maxTop is how many members of a body's object a scan notes.
const maxTop = 32

// member is where a member of the top-level object is: the offsets of its key's opening
// quote, of its value and just past its value.
type member struct{ key, val, end int32 }

const (
	whyUTF8     = "text must be valid UTF-8"
	whyLoneHigh = "a \\u escape is a lone high surrogate; text must be valid Unicode"
	whyLoneLow  = "a \\u escape is a lone low surrogate; text must be valid Unicode"
	whyInf      = "numbers must be finite: this one is outside the range of a 64-bit float"
)

type scanner struct {
	b      []byte
	strict bool
	top    *members // where to note the members of the top-level object, or nil
	note   bool
	res    *scanResult
	// quote is the index of the first quote at or after the last index plainRun searched
	// from (len(b): none), bslash that of the first backslash from there before quote
	// (quote: none); -1 until searched. The scan only moves forward, so they stay right
	// while they are not behind it.
	quote, bslash int
}

// scan checks b in one pass; strict adds the strict-value checks. When top is not nil, the
// members of the top-level object are noted in it.
func scan(b []byte, strict bool, top *members) scanResult {
	// res is not a field of sc: escape analysis would then let top flow into the result
	// and move the caller's topObject to the heap.
	res := scanResult{badUTF8: -1, surr: -1, inf: -1}
	sc := scanner{b: b, strict: strict, top: top, res: &res, quote: -1, bslash: -1}
	if top != nil {
		top.n = 0
	}
	res.ok = sc.value()
	return res
}

// containers is the stack of open containers, a bit each (1 for an object), so nothing
// recurses and nothing allocates.
type containers struct {
	bits  [MaxDepth / 64]uint64
	depth int
}

// push opens a container; false past MaxDepth.
func (c *containers) push(object bool) bool {
	if c.depth == MaxDepth {
		return false
	}
	bit := uint64(1) << (c.depth & 63)
	if object {
		c.bits[c.depth>>6] |= bit
	} else {
		c.bits[c.depth>>6] &^= bit
	}
	c.depth++
	return true
}

// object reports whether the innermost open container is an object.
func (c *containers) object() bool {
	d := c.depth - 1
	return c.bits[d>>6]&(1<<(d&63)) != 0
}

// value runs the grammar over the whole of sc.b.
func (sc *scanner) value() bool {
	b := sc.b
	var st containers
	i := skipWSb(b, 0)
	sc.res.object = i < len(b) && b[i] == '{'
	sc.note = sc.top != nil && sc.res.object && len(b) <= math.MaxInt32
	for {
		// A value starts at b[i] (whitespace skipped).
		if i >= len(b) {
			return false
		}
		var opened, done bool
		if i, opened = sc.start(i, &st); opened {
			continue
		}
		if i, done = sc.after(i, &st); done {
			return i >= 0
		}
	}
}

// start scans the value at b[i]: a scalar, or the opening of a container. opened reports a
// container opened with a value in it, which starts at the returned index; otherwise the
// index is past the value (-1: invalid).
func (sc *scanner) start(i int, st *containers) (next int, opened bool) {
	b := sc.b
	switch c := b[i]; c {
	case '"':
		return sc.str(i + 1), false
	case '{', '[':
		if !st.push(c == '{') {
			return -1, false
		}
		i = skipWSb(b, i+1)
		if i >= len(b) {
			return -1, false
		}
		if c == '{' {
			if b[i] != '}' {
				k := i
				if i = sc.key(i); i < 0 {
					return -1, false
				}
				if st.depth == 1 && sc.note {
					sc.noteMember(k, i)
				}
				return i, true
			}
		} else if b[i] != ']' {
			return i, true
		}
		st.depth--
		return i + 1, false
	case 't':
		return lit(b, i, "true"), false
	case 'f':
		return lit(b, i, "false"), false
	case 'n':
		return lit(b, i, "null"), false
	default:
		if c != '-' && (c < '0' || c > '9') {
			return -1, false
		}
		return sc.number(i), false
	}
}

// after closes containers after a value that ended at i until a comma starts the next
// value, whose index it returns; done when the whole input was scanned (the index is then
// len(sc.b)) or is invalid (-1).
func (sc *scanner) after(i int, st *containers) (next int, done bool) {
	b := sc.b
	for {
		if i < 0 {
			return -1, true
		}
		if st.depth == 1 && sc.note {
			sc.top.at[sc.top.n-1].end = int32(i)
		}
		i = skipWSb(b, i)
		if st.depth == 0 {
			if i == len(b) {
				return i, true
			}
			return -1, true
		}
		if i >= len(b) {
			return -1, true
		}
		obj := st.object()
		c := b[i]
		if c == ',' {
			i = skipWSb(b, i+1)
			if obj {
				k := i
				if i = sc.key(i); i < 0 {
					return -1, true
				}
				if st.depth == 1 && sc.note {
					sc.noteMember(k, i)
				}
			}
			return i, false
		}
		if obj && c != '}' || !obj && c != ']' {
			return -1, true
		}
		st.depth--
		i++
	}
}

// noteMember notes a member of the top-level object whose key starts at k and value at v.
func (sc *scanner) noteMember(k, v int) {
	if sc.top.n == maxTop {
		sc.note, sc.top.n = false, -1
		return
	}
	sc.top.at[sc.top.n] = member{key: int32(k), val: int32(v)}
	sc.top.n++
}

// topObject is a body that passed a strict scan, with the members of its object.
type topObject struct {
	s   string // the whole body
	sr  scanResult
	top members
}

// pick is pick on the body's object; it reads the members the scan noted instead of
// walking the body again.
func (o *topObject) pick(names, out []string) (dup string) {
	if o.top.n < 0 {
		return pick(o.s[skipWS(o.s, 0):], names, out)
	}
	for _, m := range o.top.at[:o.top.n] {
		ke := stringEnd(o.s, int(m.key))
		key := o.s[m.key+1 : ke-1]
		if strings.IndexByte(key, '\\') >= 0 {
			key = unescape(o.s[m.key:ke])
		}
		for k, n := range names {
			if n == key {
				if out[k] != "" {
					return key
				}
				out[k] = o.s[m.val:m.end]
				break
			}
		}
	}
	return ""
}

func skipWSb(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// lit returns the index past the literal word at b[i], or -1.
func lit(b []byte, i int, word string) int {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return -1
	}
	return i + len(word)
}

// key reads an object key and its colon at b[i]; it returns the index of the member's value
// (whitespace skipped), or -1.
func (sc *scanner) key(i int) int {
	b := sc.b
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = sc.str(i + 1); i < 0 {
		return -1
	}
	i = skipWSb(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipWSb(b, i+1)
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special has the high bit of every byte of w set that a string scan must look at: a quote,
// a backslash, a control character or a non-ASCII byte. Bits above the first such byte may
// be set spuriously (borrows), so only the lowest set bit is meaningful.
func special(w uint64) uint64 {
	return (w | (w - 0x20*ones) | ((w ^ '"'*ones) - ones) | ((w ^ '\\'*ones) - ones)) & highs
}

// ctrlOrHigh has the high bit set of the first byte of w that is a control character or
// not ASCII (bits above it may be set spuriously); it is zero when there is none.
func ctrlOrHigh(w uint64) uint64 { return (w | (w - 0x20*ones)) & highs }

// str reads the rest of a string whose opening quote is at b[i-1] and returns the index past
// its closing quote, or -1.
func (sc *scanner) str(i int) int {
	b := sc.b
	for {
		// Short strings and text dense with escapes: eight bytes at a time; after 32 plain
		// bytes, the rest of a long run goes to plainRun.
		if len(b)-i >= 32 {
			w := b[i : i+32]
			if m := special(binary.LittleEndian.Uint64(w)); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
			} else if m := special(binary.LittleEndian.Uint64(w[8:])); m != 0 {
				i += 8 + bits.TrailingZeros64(m)>>3
			} else if m := special(binary.LittleEndian.Uint64(w[16:])); m != 0 {
				i += 16 + bits.TrailingZeros64(m)>>3
			} else if m := special(binary.LittleEndian.Uint64(w[24:])); m != 0 {
				i += 24 + bits.TrailingZeros64(m)>>3
			} else {
				i = sc.plainRun(i + 32)
			}
		} else {
			for len(b)-i >= 8 {
				if m := special(binary.LittleEndian.Uint64(b[i:])); m != 0 {
					i += bits.TrailingZeros64(m) >> 3
					break
				}
				i += 8
			}
		}
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c == '\\':
			if i = sc.escape(i); i < 0 {
				return -1
			}
		case c < 0x20:
			return -1
		case c < utf8.RuneSelf:
			i++
		case !sc.strict:
			i++
		default:
			// A run of non-ASCII text, rune by rune (what utf8.ValidString does).
			for i < len(b) && b[i] >= utf8.RuneSelf {
				r, n := utf8.DecodeRune(b[i:])
				if r == utf8.RuneError && n == 1 && sc.res.badUTF8 < 0 {
					sc.res.badUTF8 = i
				}
				i += n
			}
		}
	}
}

// plainRun returns the index of the first byte at or after b[i] that a string scan must
// look at (quote, backslash, control or non-ASCII), or len(b). It is for long runs of plain
// text: quotes and backslashes are found by bytes.IndexByte (vector instructions), and
// control and non-ASCII bytes before the first of them 32 bytes at a time.
func (sc *scanner) plainRun(i int) int {
	b := sc.b
	if sc.quote < i {
		sc.quote = len(b)
		if q := bytes.IndexByte(b[i:], '"'); q >= 0 {
			sc.quote = i + q
		}
		sc.bslash = -1
	}
	if sc.bslash < i {
		sc.bslash = sc.quote
		if k := bytes.IndexByte(b[i:sc.quote], '\\'); k >= 0 {
			sc.bslash = i + k
		}
	}
	end := min(sc.quote, sc.bslash)
	for end-i >= 32 {
		w := b[i : i+32]
		w0, w1 := binary.LittleEndian.Uint64(w), binary.LittleEndian.Uint64(w[8:])
		w2, w3 := binary.LittleEndian.Uint64(w[16:]), binary.LittleEndian.Uint64(w[24:])
		// ctrlOrHigh of the four words at once: the high bits are masked once.
		if (w0|w1|w2|w3|(w0-0x20*ones)|(w1-0x20*ones)|(w2-0x20*ones)|(w3-0x20*ones))&highs != 0 {
			break
		}
		i += 32
	}
	for end-i >= 8 {
		if m := ctrlOrHigh(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	for i < end && b[i] >= 0x20 && b[i] < utf8.RuneSelf {
		i++
	}
	return i
}

// escape reads the escape at b[i] == '\\' and returns the index past it, or -1. A strict scan
// notes a \u escape that is a lone surrogate (a high one not followed at once by a \u low one).
func (sc *scanner) escape(i int) int {
	b := sc.b
	if i+1 >= len(b) {
		return -1
	}
	switch b[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i + 2
	case 'u':
	default:
		return -1
	}
	r := hex4b(b, i+2)
	if r < 0 {
		return -1
	}
	if sc.strict && r >= 0xD800 && r <= 0xDFFF {
		if r >= 0xDC00 {
			sc.loneSurrogate(i, whyLoneLow)
		} else {
			if i+12 <= len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
				if lo := hex4b(b, i+8); lo >= 0xDC00 && lo <= 0xDFFF {
					return i + 12
				}
			}
			sc.loneSurrogate(i, whyLoneHigh)
		}
	}
	return i + 6
}

func (sc *scanner) loneSurrogate(i int, why string) {
	if sc.res.surr < 0 {
		sc.res.surr, sc.res.surrWhy = i, why
	}
}

// hex4b returns the value of the four hex digits at b[i:], or -1.
func hex4b(b []byte, i int) int {
	if len(b)-i < 4 {
		return -1
	}
	r := 0
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | int(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | int(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | int(c-'A'+10)
		default:
			return -1
		}
	}
	return r
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number reads the number literal at b[i] and returns the index past it, or -1. A strict scan
// notes the first literal that is not a finite float64; only literals with an exponent or
// with 300 integer digits can be one, and most of those are decided without strconv.
func (sc *scanner) number(i int) int {
	b := sc.b
	start := i
	if b[i] == '-' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
	}
	intStart := i
	if b[i] == '0' {
		i++
	} else {
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	intDigits := i - intStart
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i >= len(b) || b[i]|0x20 != 'e' {
		if intDigits >= 300 {
			sc.checkFinite(start, i)
		}
		return i
	}
	i++
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	if i >= len(b) || !isDigit(b[i]) {
		return -1
	}
	exp := 0
	for i < len(b) && isDigit(b[i]) {
		exp = min(exp*10+int(b[i]-'0'), 1<<20)
		i++
	}
	// Below 10^300 a literal is finite whatever its digits.
	if intDigits >= 300 || !neg && intDigits+exp > 300 {
		sc.checkFinite(start, i)
	}
	return i
}

func (sc *scanner) checkFinite(start, end int) {
	if !sc.strict || sc.res.inf >= 0 {
		return
	}
	f, err := strconv.ParseFloat(bstr(sc.b[start:end]), 64)
	if err != nil && math.IsInf(f, 0) {
		sc.res.inf = start
	}
}

// nestsTooDeep reports whether s opens more than MaxDepth arrays and objects that are not
// yet closed at some point, counting brackets outside strings whether or not s is valid
// JSON. It decides which of two refusals an invalid body gets (error path only).
func nestsTooDeep(s string) bool {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			i = stringEnd(s, i) - 1
		case '{', '[':
			depth++
			if depth > MaxDepth {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}

// valuesErr is the refusal for the first strict-value violation the scan of the valid JSON
// text s found, or nil: invalid UTF-8 anywhere comes first, then lone surrogates, and a
// non-finite number wins over either when it comes earlier in the body.
func (r *scanResult) valuesErr(s string) *apierror.Error {
	off, why := r.badUTF8, whyUTF8
	if off < 0 {
		off, why = r.surr, r.surrWhy
	}
	if r.inf >= 0 && (off < 0 || r.inf < off) {
		off, why = r.inf, whyInf
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
