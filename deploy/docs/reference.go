// Package docs keeps the documents in docs/ true to the code: the configuration reference
// is generated from the binaries' own flag definitions, and the documents, comments and flag
// help speak of the project, not of how it was built.
package docs

import (
	"flag"
	"fmt"
	"strings"

	"github.com/sekgate/gateway/internal/flagenv"
)

// Reference renders fs as a Markdown table: flag, environment variable, default, meaning.
func Reference(fs *flag.FlagSet, prefix string) string {
	var b strings.Builder
	b.WriteString("| flag | environment | default | meaning |\n|---|---|---|---|\n")
	fs.VisitAll(func(f *flag.Flag) {
		def := f.DefValue
		if def == "" {
			def = "—"
		} else {
			def = "`" + def + "`"
		}
		fmt.Fprintf(&b, "| `--%s` | `%s` | %s | %s |\n", f.Name, flagenv.Name(prefix, f.Name), def,
			strings.ReplaceAll(f.Usage, "|", "\\|"))
	})
	return b.String()
}

// Splice replaces what doc holds between the lines <!-- BEGIN name --> and <!-- END name -->
// with body; ok is false when the markers are missing.
func Splice(doc, name, body string) (string, bool) {
	begin, end := "<!-- BEGIN "+name+" -->\n", "<!-- END "+name+" -->"
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		return doc, false
	}
	return doc[:i+len(begin)] + body + doc[j:], true
}
