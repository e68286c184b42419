package flagenv

import (
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
)

// DSN is a setting that holds a Postgres connection string, in URL form
// (postgres://user:pass@host/db?password=...) or keyword/value form
// (host=h password='a b'). It is a flag.Value whose String is the connection string with
// its passwords replaced by RedactedPassword (RedactDSN), so --print-config shows where the
// database is but never how to log in to it. Reveal returns the value for the code that
// connects.
type DSN struct{ v string }

// NewDSN returns a DSN holding the connection string v.
func NewDSN(v string) DSN { return DSN{v: v} }

// Set stores v; every string is accepted (the command checks the value when it connects).
func (d *DSN) Set(v string) error {
	d.v = v
	return nil
}

// String is the connection string without its passwords (RedactDSN).
func (d DSN) String() string { return RedactDSN(d.v) }

// Reveal returns the connection string as given.
func (d DSN) Reveal() string { return d.v }

// Format prints String for every verb.
func (d DSN) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, d.String()) }

// LogValue logs String.
func (d DSN) LogValue() slog.Value { return slog.StringValue(d.String()) }

// RedactedPassword replaces the passwords RedactDSN finds (the mask url.URL.Redacted uses).
const RedactedPassword = "xxxxx"

// RedactDSN returns the Postgres connection string s with every password replaced by
// RedactedPassword: the URL form's user:pass@ and password= (or sslpassword=) query
// parameters, the keyword/value form's password and sslpassword values, quoted or not.
// s is read with libpq's own rules, which pgx follows (a URL's user information ends at
// its first '@' before any '/', even one past a '?'; a keyword's value may start after
// white space). A string that is neither form is replaced whole by Redacted; "" stays "".
func RedactDSN(s string) string {
	if s == "" {
		return ""
	}
	for _, prefix := range []string{"postgresql://", "postgres://"} {
		if rest, ok := strings.CutPrefix(s, prefix); ok {
			return prefix + redactURLRest(rest)
		}
	}
	if out, ok := redactKeywordValue(s); ok {
		return out
	}
	return Redacted
}

// isPasswordKey reports whether a connection parameter names a password. Any key that
// mentions one counts, whatever its case: masking one value too many is harmless.
func isPasswordKey(key string) bool {
	if k, err := url.PathUnescape(key); err == nil {
		key = k
	}
	return strings.Contains(strings.ToLower(key), "password")
}

// redactURLRest masks the passwords of a connection URL after its scheme.
func redactURLRest(rest string) string {
	var b strings.Builder
	if i := strings.IndexAny(rest, "@/"); i >= 0 && rest[i] == '@' {
		user, pass, ok := strings.Cut(rest[:i], ":")
		b.WriteString(user)
		if ok {
			b.WriteByte(':')
			if pass != "" {
				b.WriteString(RedactedPassword)
			}
		}
		b.WriteByte('@')
		rest = rest[i+1:]
	}
	head, query, ok := strings.Cut(rest, "?")
	b.WriteString(head)
	if !ok {
		return b.String()
	}
	b.WriteByte('?')
	for i, pair := range strings.Split(query, "&") {
		if i > 0 {
			b.WriteByte('&')
		}
		if key, _, ok := strings.Cut(pair, "="); ok && isPasswordKey(key) {
			pair = key + "=" + RedactedPassword
		}
		b.WriteString(pair)
	}
	return b.String()
}

// kvSpace is the white space of the keyword/value form.
const kvSpace = " \t\n\r\v\f"

// redactKeywordValue masks the password values of a keyword/value connection string,
// keeping the rest byte for byte; ok is false when s is not in that form (a keyword that
// is not letters, digits and '_', a missing '=', an unterminated quote).
func redactKeywordValue(s string) (string, bool) {
	var b strings.Builder
	for {
		t := strings.TrimLeft(s, kvSpace)
		b.WriteString(s[:len(s)-len(t)])
		if s = t; s == "" {
			return b.String(), true
		}
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return "", false
		}
		key := strings.TrimRight(s[:eq], kvSpace)
		if !isKeyword(key) {
			return "", false
		}
		b.WriteString(s[:eq+1])
		s = s[eq+1:]
		t = strings.TrimLeft(s, kvSpace)
		b.WriteString(s[:len(s)-len(t)])
		s = t
		n, ok := valueLen(s)
		if !ok {
			return "", false
		}
		if isPasswordKey(key) && n > 0 {
			b.WriteString(RedactedPassword)
		} else {
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
}

// isKeyword reports whether k has the form of a libpq keyword: ASCII letters, digits and
// '_'. Anything else (a "postgres://user:pass@host" before an '=') is no keyword, so the
// string is not taken apart and RedactDSN hides it whole.
func isKeyword(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// valueLen returns the length of the keyword/value value that starts s: up to white space
// unquoted, up to the closing quote quoted, a backslash escaping the byte after it.
func valueLen(s string) (int, bool) {
	if s == "" {
		return 0, true
	}
	if s[0] != '\'' {
		end := 0
		for ; end < len(s) && !strings.ContainsRune(kvSpace, rune(s[end])); end++ {
			if s[end] == '\\' {
				end++
				if end == len(s) {
					break
				}
			}
		}
		return end, true
	}
	for end := 1; end < len(s); end++ {
		switch s[end] {
		case '\\':
			end++
		case '\'':
			return end + 1, true
		}
	}
	return 0, false
}
