package gatewayctl

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

// clean makes text from the control plane safe to print on a terminal: C0 and C1 control
// characters (escape sequences, carriage returns, newlines inside a cell), DEL, Unicode
// bidirectional overrides and isolates, and invalid UTF-8 are written as Go escapes
// (\x1b, \n, \u202e, \xff); everything else is kept. Signup fields and customer names come
// from the public, so every table and detail value goes through it.
func clean(s string) string {
	if !needsCleaning(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(s[i])&0xf, 16))
		case adminapi.UnsafeRune(r):
			q := strconv.QuoteRuneToASCII(r) // '\x1b', '\n', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func needsCleaning(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return true
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || adminapi.UnsafeRune(r) {
			return true
		}
		i += n
	}
	return false
}

// cleanAll applies clean to every element.
func cleanAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = clean(v)
	}
	return out
}

// cleanLines applies clean to each line of a multi-line message, keeping its newlines.
func cleanLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = clean(l)
	}
	return strings.Join(lines, "\n")
}

// jsonSafe escapes, in indented JSON, every rune a terminal would act on as \uXXXX.
// Outside strings valid JSON holds only whitespace and punctuation, so such a rune is
// inside a string and the escape keeps its value; whitespace (\t, \n, \r) between
// tokens is kept. Invalid UTF-8 becomes \ufffd.
func jsonSafe(b []byte) []byte {
	clean := true
	for _, c := range b {
		if c >= utf8.RuneSelf || (c < 0x20 && c != '\n' && c != '\t' && c != '\r') || c == 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			out = append(out, `\ufffd`...)
		case r != '\n' && r != '\t' && r != '\r' && adminapi.UnsafeRune(r):
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}
