package flagenv

import (
	"fmt"
	"io"
	"log/slog"
)

// Redacted is what a set Secret prints instead of its value.
const Redacted = "[redacted]"

// Secret is a setting that holds a credential (a token, a key, a signing secret). It is a
// flag.Value whose String is Redacted when set and "" when empty, so --print-config, help
// output, fmt verbs and slog never show the value: printing is safe because of the
// setting's type, whatever its name. Reveal returns the value for the code that uses it.
type Secret struct{ v string }

// NewSecret returns a Secret holding v (a value read from a file, for instance).
func NewSecret(v string) Secret { return Secret{v: v} }

// Set stores v; every string is accepted (the command checks the value after parsing).
func (s *Secret) Set(v string) error {
	s.v = v
	return nil
}

// String is Redacted when the secret is set, "" when it is empty.
func (s Secret) String() string {
	if s.v == "" {
		return ""
	}
	return Redacted
}

// Reveal returns the secret's value.
func (s Secret) Reveal() string { return s.v }

// Format prints String for every verb, so %d, %x or %#v cannot show the value either.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, s.String()) }

// LogValue logs String.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }
