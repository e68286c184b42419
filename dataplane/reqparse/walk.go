package reqparse

import (
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
)

// This file walks JSON text that the scan (scan.go) has already accepted. gjson's iterators
// unescape every string value they pass (one allocation per string containing an escape,
// i.e. nearly every message content), so the walk over the validated bytes is done here: it
// hands out raw value text and allocates nothing unless a key itself is escaped.

// MaxDepth is the deepest nesting of arrays and objects a body may have. Recursive parsers
// (gjson's, encoding/json's) would let a few MiB of "[" exhaust the goroutine stack, so the
// scan, which does not recurse, bounds nesting before any recursive code runs.
const MaxDepth = 128

// ValidJSON reports whether b is one valid JSON value nested at most MaxDepth deep. It is
// safe on any input, including bodies built to exhaust the stack of recursive parsers.
// It accepts exactly what gjson.Valid accepts within that depth.
func ValidJSON(b []byte) bool { return scan(b, false, nil).ok }

// bstr views b as a string without copying. Strings derived from it must not outlive the
// caller's use of b unless cloned.
func bstr(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// stringEnd returns the index just past the string literal starting at s[i] == '"', or
// len(s) when it is not terminated. Short strings and text dense with escapes are read eight
// bytes at a time; a long run without quotes and backslashes goes to IndexByte.
func stringEnd(s string, i int) int {
	j := i + 1
	for plain := 0; plain < 4 && len(s)-j >= 8; {
		m := quoteOrBackslash(load64(s, j))
		if m == 0 {
			j += 8
			plain++
			continue
		}
		j += bits.TrailingZeros64(m) >> 3
		if s[j] == '"' {
			return j + 1
		}
		j += 2 // an escape
	}
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

// load64 reads the eight bytes at s[i:] as a little-endian word (one load on most machines).
func load64(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// quoteOrBackslash has the high bit set of the first byte of w that is a quote or a
// backslash (bits above it may be set spuriously).
func quoteOrBackslash(w uint64) uint64 {
	q, b := w^('"'*ones), w^('\\'*ones)
	return ((q-ones)&^q | (b-ones)&^b) & highs
}

func skipWS(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// ValueEnd returns the index just past the JSON value that starts at b[i]. On bytes that
// are not JSON it still returns an index within len(b), past i for an object, array or
// string.
func ValueEnd(b []byte, i int) int { return valueEnd(bstr(b), i) }

// valueEnd returns the index just past the JSON value starting at s[i].
func valueEnd(s string, i int) int {
	if i >= len(s) {
		return len(s)
	}
	switch s[i] {
	case '"':
		return stringEnd(s, i)
	case '{', '[':
		depth := 0
		for i < len(s) {
			switch s[i] {
			case '"':
				i = stringEnd(s, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(s)
	default:
		for i < len(s) {
			switch s[i] {
			case ',', ']', '}', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return len(s)
	}
}

// eachMember calls fn with each key (unescaped) and raw value of the object obj, in order,
// until fn returns false. obj must be the raw text of a validated object.
func eachMember(obj string, fn func(key, val string) bool) {
	if len(obj) < 2 || obj[0] != '{' {
		return
	}
	i := 1
	for {
		i = skipWS(obj, i)
		if i >= len(obj) || obj[i] == '}' {
			return
		}
		if obj[i] == ',' {
			i++
			continue
		}
		if obj[i] != '"' {
			return
		}
		ke := stringEnd(obj, i)
		if ke-1 <= i {
			return
		}
		key := obj[i+1 : ke-1]
		if strings.IndexByte(key, '\\') >= 0 {
			key = unescape(obj[i:ke])
		}
		i = skipWS(obj, ke)
		if i < len(obj) && obj[i] == ':' {
			i++
		}
		i = skipWS(obj, i)
		ve := valueEnd(obj, i)
		if ve <= i {
			return
		}
		if !fn(key, obj[i:ve]) {
			return
		}
		i = ve
	}
}

// eachElement calls fn with the index and raw text of each element of the array arr, in
// order, until fn returns false.
func eachElement(arr string, fn func(i int, val string) bool) {
	if len(arr) < 2 || arr[0] != '[' {
		return
	}
	i, n := 1, 0
	for {
		i = skipWS(arr, i)
		if i >= len(arr) || arr[i] == ']' {
			return
		}
		if arr[i] == ',' {
			i++
			continue
		}
		ve := valueEnd(arr, i)
		if ve <= i {
			return
		}
		if !fn(n, arr[i:ve]) {
			return
		}
		n++
		i = ve
	}
}

// pick scans obj once and stores the raw values of the keys in names into out (out[k] for
// names[k]; "" when absent). It returns the first of those keys that occurs twice: the
// gateway reads the first occurrence while many upstream parsers keep the last, so a
// duplicated key the gateway looks at could make it route or meter a different request
// than the one the upstream runs.
func pick(obj string, names []string, out []string) (dup string) {
	if len(obj) < 2 || obj[0] != '{' {
		return ""
	}
	_, dup = pickEnd(obj, 0, names, out)
	return dup
}

// pickEnd is pick on the object that starts at s[i] (a validated one) and also returns the
// index just past it; after a duplicate it stops there.
func pickEnd(s string, i int, names []string, out []string) (end int, dup string) {
	i++
	for {
		i = skipWS(s, i)
		if i >= len(s) {
			return len(s), ""
		}
		switch s[i] {
		case '}':
			return i + 1, ""
		case ',':
			i++
			continue
		case '"':
		default:
			return i, "" // not reached on validated JSON
		}
		ke := stringEnd(s, i)
		if ke-1 <= i {
			return ke, ""
		}
		key := s[i+1 : ke-1]
		if strings.IndexByte(key, '\\') >= 0 {
			key = unescape(s[i:ke])
		}
		i = skipWS(s, ke)
		if i < len(s) && s[i] == ':' {
			i++
		}
		i = skipWS(s, i)
		ve := valueEnd(s, i)
		if ve <= i {
			return ve, ""
		}
		for k, n := range names {
			if n == key {
				if out[k] != "" {
					return ve, key
				}
				out[k] = s[i:ve]
				break
			}
		}
		i = ve
	}
}

// eachObject is eachElement for an array whose object elements the caller reads with pick:
// out is cleared for each element and, when the element is an object, filled from it by
// the same walk that finds its end (eachElement and then pick would walk it twice); dup is
// pick's answer.
func eachObject(arr string, names, out []string, fn func(i int, val, dup string) bool) {
	if len(arr) < 2 || arr[0] != '[' {
		return
	}
	i, n := 1, 0
	for {
		i = skipWS(arr, i)
		if i >= len(arr) || arr[i] == ']' {
			return
		}
		if arr[i] == ',' {
			i++
			continue
		}
		clear(out)
		var ve int
		dup := ""
		if arr[i] == '{' {
			if ve, dup = pickEnd(arr, i, names, out); dup != "" {
				ve = valueEnd(arr, i)
			}
		} else {
			ve = valueEnd(arr, i)
		}
		if ve <= i {
			return
		}
		if !fn(n, arr[i:ve], dup) {
			return
		}
		n++
		i = ve
	}
}

// JSON kinds of raw values.
const (
	kAbsent = iota
	kNull
	kBool
	kNumber
	kString
	kObject
	kArray
)

func kindOf(v string) int {
	if v == "" {
		return kAbsent
	}
	switch v[0] {
	case 'n':
		return kNull
	case 't', 'f':
		return kBool
	case '"':
		return kString
	case '{':
		return kObject
	case '[':
		return kArray
	}
	return kNumber
}

// given reports whether the optional field v is present and not null.
func given(v string) bool { return v != "" && v != "null" }

// str returns the content of the string literal v, unescaped (allocating only when v
// contains an escape).
func str(v string) string {
	if len(v) < 2 || v[0] != '"' {
		return ""
	}
	in := v[1 : len(v)-1]
	if strings.IndexByte(in, '\\') < 0 {
		return in
	}
	return unescape(v)
}

func unescape(lit string) string { return gjson.Parse(lit).Str }

// textLen returns the UTF-8 length of the unescaped content of the string literal v without
// allocating. Clients often send non-ASCII text as \u escapes, which would inflate a size
// estimate taken from the raw bytes up to six times.
func textLen(v string) int64 {
	if len(v) < 2 || v[0] != '"' {
		return 0
	}
	in := v[1 : len(v)-1]
	n := int64(len(in))
	for {
		k := strings.IndexByte(in, '\\')
		if k < 0 || k+1 >= len(in) {
			return n
		}
		in = in[k+1:]
		if in[0] != 'u' || len(in) < 5 {
			n-- // two bytes of escape, one byte of text
			in = in[1:]
			continue
		}
		r := hex4(in[1:5])
		if r >= 0xD800 && r < 0xDC00 && len(in) >= 11 && in[5] == '\\' && in[6] == 'u' {
			// surrogate pair: twelve bytes of escape, four bytes of text
			n -= 8
			in = in[11:]
			continue
		}
		n -= 6 - int64(utf8.RuneLen(rune(r)))
		in = in[5:]
	}
}

func hex4(s string) int {
	r := 0
	for i := 0; i < 4 && i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | int(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | int(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | int(c-'A'+10)
		}
	}
	return r
}

// asInt returns the value of the number v when it is an integer (JSON Schema's sense: a
// number with no fractional part, so 1.0 counts) that fits an int64; ok is false for
// anything else, including integers outside the int64 range.
func asInt(v string) (int64, bool) {
	if kindOf(v) != kNumber {
		return 0, false
	}
	neg := v[0] == '-'
	d := v
	if neg {
		d = v[1:]
	}
	plain := d != ""
	var n uint64
	for i := 0; i < len(d); i++ {
		c := d[i]
		if c < '0' || c > '9' {
			plain = false
			break
		}
		if n > (math.MaxUint64-9)/10 {
			return 0, false // over 20 digits: outside int64 whatever follows
		}
		n = n*10 + uint64(c-'0')
	}
	if plain {
		switch {
		case !neg && n <= math.MaxInt64:
			return int64(n), true
		case neg && n <= 1<<63:
			return int64(-n), true
		}
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f != math.Trunc(f) || f >= 1<<63 || f < -(1<<63) {
		return 0, false
	}
	return int64(f), true
}
