package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Format is the text form of a catalogue.
type Format string

// The catalogue's text forms.
const (
	FormatYAML Format = "YAML"
	FormatJSON Format = "JSON"
)

// Sniff tells a JSON catalogue (its first non-blank character opens an object or a list)
// from a YAML one.
func Sniff(src []byte) Format {
	t := bytes.TrimLeft(src, " \t\r\n\ufeff")
	if len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		return FormatJSON
	}
	return FormatYAML
}

// Source is where each field path of a catalogue read from text sits in that text.
type Source struct {
	Format Format
	pos    map[string]Position
}

// Parse reads a catalogue in the format Sniff finds.
func Parse(src []byte) (*Catalog, *Source, error) { return ParseAs(src, Sniff(src)) }

// Load parses a catalogue and validates it, placing any problem in the text.
func Load(src []byte) (*Catalog, *Source, error) {
	c, s, err := Parse(src)
	if err != nil {
		return nil, s, err
	}
	if err := c.Validate(); err != nil {
		return nil, s, s.Locate(err)
	}
	return c, s, nil
}

// ParseAs reads a catalogue of the given format. Unknown fields (with the closest known
// one as a suggestion), wrong types and malformed text are *Errors with a line and,
// where known, a column.
func ParseAs(src []byte, f Format) (*Catalog, *Source, error) {
	s := &Source{Format: f, pos: map[string]Position{}}
	src = bytes.TrimPrefix(src, []byte("\ufeff")) // a byte order mark some editors write
	if f == FormatJSON {
		if err := jsonSyntax(src); err != nil {
			return nil, s, err
		}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		if f == FormatJSON { // valid JSON that YAML does not read: no positions
			return decodeStrict(src, f)
		}
		return nil, s, yamlError(err)
	}
	if len(doc.Content) == 0 {
		return nil, s, &Error{Message: "the catalogue is empty"}
	}
	j, derr := yamlAsJSON(&doc, src, f)
	var te *yaml.TypeError // duplicate keys: the walk places them
	if derr != nil && !errors.As(derr, &te) {
		return nil, s, malformedYAML(derr)
	}
	w := walker{pos: s.pos}
	if err := w.walk(doc.Content[0], reflect.TypeOf(Catalog{}), ""); err != nil {
		return nil, s, err
	}
	if derr != nil {
		return nil, s, malformedYAML(derr)
	}
	c, _, err := decodeStrict(j, f)
	return c, s, err
}

func malformedYAML(err error) error {
	return &Error{Message: "malformed catalogue YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
}

// yamlAsJSON returns a YAML catalogue's document as JSON, and JSON text as it is. Decoding
// comes before the walk, which follows aliases: it refuses excessive aliasing first.
func yamlAsJSON(doc *yaml.Node, src []byte, f Format) ([]byte, error) {
	if f == FormatJSON {
		return src, nil
	}
	var v any
	if err := doc.Decode(&v); err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("no JSON form: %w", err)
	}
	return b, nil
}

// decodeStrict decodes JSON into a Catalog, refusing unknown fields: the walk has
// already refused them with positions, so this is the last word, not the usual one.
func decodeStrict(j []byte, f Format) (*Catalog, *Source, error) {
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	var c Catalog
	if err := dec.Decode(&c); err != nil {
		return nil, nil, &Error{Message: fmt.Sprintf("malformed catalogue %s: %v", f, err)}
	}
	return &c, nil, nil
}

// jsonSyntax checks src is one JSON value, placing a syntax error by line and column.
func jsonSyntax(src []byte) error {
	dec := json.NewDecoder(bytes.NewReader(src))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		off, msg := int64(len(src)), "the JSON ends early"
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off, msg = se.Offset-1, se.Error()
		}
		p := offsetPosition(src, off)
		return &Error{Message: "malformed catalogue JSON: " + msg, Line: p.Line, Column: p.Column}
	}
	if dec.More() {
		off := dec.InputOffset()
		for off < int64(len(src)) && strings.ContainsRune(" \t\r\n", rune(src[off])) {
			off++
		}
		p := offsetPosition(src, off)
		return &Error{Message: "malformed catalogue JSON: data after the catalogue", Line: p.Line, Column: p.Column}
	}
	return nil
}

// offsetPosition is the line and column (in characters) of byte offset off of src.
func offsetPosition(src []byte, off int64) Position {
	off = max(0, min(off, int64(len(src))))
	before := src[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	start := bytes.LastIndexByte(before, '\n') + 1
	return Position{Line: line, Column: utf8.RuneCount(before[start:]) + 1}
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlError turns a YAML syntax error ("yaml: line 3: ...") into an *Error on that line.
func yamlError(err error) error {
	m := yamlLine.FindStringSubmatch(err.Error())
	if m == nil {
		return &Error{Message: "malformed catalogue YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	line, _ := strconv.Atoi(m[1])
	return &Error{Message: "malformed catalogue YAML: " + m[2], Line: line}
}

// Locate places err, a validation *Error naming a field path, at that path in the text
// (or at the nearest enclosing object the text has, for a field it lacks). Other errors,
// and errors already placed, are returned as they are.
func (s *Source) Locate(err error) error {
	var ce *Error
	if s == nil || !errors.As(err, &ce) || ce.Line > 0 {
		return err
	}
	for path := ce.Param; ; {
		if p, ok := s.pos[path]; ok {
			out := *ce
			out.Line, out.Column = p.Line, p.Column
			return &out
		}
		if path == "" {
			return err
		}
		path = parentPath(path)
	}
}

// parentPath drops a path's last step: models[0].routes[1] -> models[0].routes -> models[0].
func parentPath(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	return path[:i]
}
