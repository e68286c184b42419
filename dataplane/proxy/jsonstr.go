package proxy

import (
	"unicode/utf16"
	"unicode/utf8"
)

// JSON string contents with escapes, as a standard decoder reads them (encoding/json: a
// lone surrogate becomes U+FFFD).

// decodedLen is the UTF-8 length of the raw JSON string contents s once unescaped.
func decodedLen(s []byte) int64 {
	var n int64
	for i := 0; i < len(s); {
		r, next := unescapeAt(s, i)
		if r < 0 {
			n++ // a byte as it is
		} else {
			n += int64(utf8.RuneLen(r))
		}
		i = next
	}
	return n
}

// unescapeKey appends the raw JSON string contents s, unescaped, to dst.
func unescapeKey(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		r, next := unescapeAt(s, i)
		if r < 0 {
			dst = append(dst, s[i])
		} else {
			dst = utf8.AppendRune(dst, r)
		}
		i = next
	}
	return dst
}

// unescapeAt reads the character at s[i]: an escape as the rune it spells, or -1 for a
// plain byte; next is where the next character starts.
func unescapeAt(s []byte, i int) (r rune, next int) {
	if s[i] != '\\' || i+1 >= len(s) {
		return -1, i + 1
	}
	switch c := s[i+1]; c {
	case 'u':
		u, ok := hex4(s, i+2)
		if !ok {
			return -1, i + 1
		}
		if utf16.IsSurrogate(u) {
			if i+7 < len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
				if lo, ok := hex4(s, i+8); ok {
					if p := utf16.DecodeRune(u, lo); p != utf8.RuneError {
						return p, i + 12
					}
				}
			}
			return utf8.RuneError, i + 6
		}
		return u, i + 6
	case 'n':
		return '\n', i + 2
	case 't':
		return '\t', i + 2
	case 'r':
		return '\r', i + 2
	case 'b':
		return '\b', i + 2
	case 'f':
		return '\f', i + 2
	default: // \" \\ \/
		return rune(c), i + 2
	}
}

// hex4 reads four hex digits at s[i:].
func hex4(s []byte, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range s[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
