package gatewayctl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// printJSON writes raw JSON indented, followed by a newline. Characters a terminal would
// act on (C1 controls, bidirectional overrides; the encoder already escapes C0) are
// written as \uXXXX escapes, which keeps the JSON equal in value.
func (a *app) printJSON(raw json.RawMessage) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return fmt.Errorf("format JSON answer: %w", err)
	}
	buf.WriteByte('\n')
	_, err := a.out.Write(jsonSafe(buf.Bytes()))
	return err
}

// newTable returns a borderless table with left-aligned upper-case headers.
func newTable(w io.Writer, header ...any) *tablewriter.Table {
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{
				Separators: tw.Separators{BetweenColumns: tw.Off, BetweenRows: tw.Off},
				Lines:      tw.Lines{ShowHeaderLine: tw.Off},
			},
		})),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoFormat(tw.Off),
	)
	for i, h := range header {
		if s, ok := h.(string); ok {
			header[i] = strings.ToUpper(clean(s))
		}
	}
	t.Header(header...)
	return t
}

// table renders rows under header; every cell is cleaned of terminal control characters.
func (a *app) table(header []any, rows [][]string) error {
	t := newTable(a.out, header...)
	for _, r := range rows {
		if err := t.Append(cleanAll(r)); err != nil {
			return err
		}
	}
	return t.Render()
}

// details renders field/value pairs, one per line, cleaned of terminal control characters.
func (a *app) details(pairs ...string) error {
	width := 0
	for i := 0; i < len(pairs); i += 2 {
		width = max(width, len(pairs[i]))
	}
	var b strings.Builder
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(&b, "%-*s  %s\n", width+1, clean(pairs[i])+":", clean(pairs[i+1]))
	}
	_, err := io.WriteString(a.out, b.String())
	return err
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func fmtTimePtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return fmtTime(*t)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// list joins s with commas, or "-" when empty.
func list(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
}
