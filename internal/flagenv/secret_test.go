package flagenv

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
)

func TestSecret(t *testing.T) {
	var s Secret
	if s.String() != "" || s.Reveal() != "" {
		t.Fatalf("empty secret prints %q, reveals %q", s.String(), s.Reveal())
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var(&s, "api-key", "")
	if err := fs.Parse([]string{"--api-key", "hunter2"}); err != nil {
		t.Fatal(err)
	}
	if s.Reveal() != "hunter2" || s.String() != Redacted || fs.Lookup("api-key").Value.String() != Redacted {
		t.Fatalf("reveals %q, prints %q", s.Reveal(), s.String())
	}
	if NewSecret("x").Reveal() != "x" {
		t.Fatal("NewSecret does not hold its value")
	}
	holder := struct{ Key Secret }{s}
	for _, verb := range []string{"%v", "%s", "%q", "%#v", "%+v", "%x", "%d", "%T %v"} {
		var got string
		if verb == "%T %v" {
			got = fmt.Sprintf(verb, s, s)
		} else {
			got = fmt.Sprintf(verb, s) + fmt.Sprintf(verb, &s) + fmt.Sprintf(verb, holder)
		}
		if strings.Contains(got, "hunter2") {
			t.Errorf("%s prints %q", verb, got)
		}
	}
	var log bytes.Buffer
	slog.New(slog.NewTextHandler(&log, nil)).Info("settings", "key", s, "holder", holder)
	slog.New(slog.NewJSONHandler(&log, nil)).Info("settings", "key", s, "holder", holder)
	if strings.Contains(log.String(), "hunter2") || !strings.Contains(log.String(), Redacted) {
		t.Errorf("log: %s", log.String())
	}
}
