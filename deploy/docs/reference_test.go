package docs

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sekgate/gateway/controlplane/plane"
	"github.com/sekgate/gateway/dataplane/node"
	"github.com/sekgate/gateway/internal/flagenv"
)

// maxHelp is the longest flag help: one short line; the reasoning lives in
// docs/configuration.md.
const maxHelp = 100

var binaries = []struct {
	name string
	fs   func() *flag.FlagSet
}{
	{"dataplane", node.FlagSet},
	{"controlplane", plane.FlagSet},
}

// TestConfigurationReference fails when docs/configuration.md's flag tables differ from the
// binaries' flags; UPDATE_DOCS=1 (make docs) rewrites them.
func TestConfigurationReference(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "configuration.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, bin := range binaries {
		fs := bin.fs()
		flagenv.Register(fs)
		var ok bool
		if doc, ok = Splice(doc, bin.name+" flags", Reference(fs, "GATEWAY_")); !ok {
			t.Fatalf("%s has no <!-- BEGIN %s flags --> … <!-- END %s flags --> section", path, bin.name, bin.name)
		}
		fs.VisitAll(func(f *flag.Flag) {
			if strings.Contains(f.Usage, "\n") || len([]rune(f.Usage)) > maxHelp {
				t.Errorf("%s --%s: help must be one line of at most %d characters (%d): %q", bin.name, f.Name, maxHelp, len([]rune(f.Usage)), f.Usage)
			}
		})
	}
	if doc == string(b) {
		return
	}
	if os.Getenv("UPDATE_DOCS") != "" {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is out of date with the binaries' flags: run make docs", path)
}
