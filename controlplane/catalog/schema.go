package catalog

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/sekgate/gateway/shared/snapshot"
)

// object is what a catalogue object may hold: its JSON field names and their Go types.
type object struct {
	name   string // what the operator calls it: catalogue, model, route
	fields map[string]reflect.Type
	keys   []string // sorted field names, for suggestions
}

var objects = map[reflect.Type]*object{}

func init() {
	for t, name := range map[reflect.Type]string{
		reflect.TypeOf(Catalog{}):        "catalogue",
		reflect.TypeOf(Model{}):          "model",
		reflect.TypeOf(snapshot.Route{}): "route",
	} {
		o := &object{name: name, fields: map[string]reflect.Type{}}
		fieldsOf(t, o.fields)
		for k := range o.fields {
			o.keys = append(o.keys, k)
		}
		sort.Strings(o.keys)
		objects[t] = o
	}
}

// fieldsOf collects the JSON fields of struct type t, embedded structs' fields included
// (the outer field wins, as in encoding/json).
func fieldsOf(t reflect.Type, into map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			inner := map[string]reflect.Type{}
			fieldsOf(f.Type, inner)
			for k, v := range inner {
				if _, ok := into[k]; !ok {
					into[k] = v
				}
			}
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		into[name] = f.Type
	}
}

// Position is a place in a catalogue's text, 1-based; a Column of 0 means the line only.
type Position struct {
	Line, Column int
}

// walker checks a YAML node tree (YAML text, or JSON text read as YAML) against the
// catalogue's shape and records where every field path sits.
type walker struct {
	pos map[string]Position
}

func at(n *yaml.Node) Position { return Position{Line: n.Line, Column: n.Column} }

func located(n *yaml.Node, param, format string, args ...any) *Error {
	return &Error{Param: param, Message: fmt.Sprintf(format, args...), Line: n.Line, Column: n.Column}
}

func (w *walker) walk(n *yaml.Node, t reflect.Type, path string) error {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	w.pos[path] = at(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil // null leaves the zero value, as in JSON
	}
	switch t.Kind() {
	case reflect.Struct:
		return w.object(n, objects[t], path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return located(n, path, "must be a list, got %s", describe(n))
		}
		for i, item := range n.Content {
			if err := w.walk(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	}
	return scalar(n, t, path)
}

func (w *walker) object(n *yaml.Node, o *object, path string) error {
	if o == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return located(n, path, "the %s must be an object of fields, got %s", o.name, describe(n))
	}
	// Merged mappings (<<: *defaults) first: the object's own fields override theirs.
	for i := 0; i+1 < len(n.Content); i += 2 {
		if key := n.Content[i]; key.Kind == yaml.ScalarNode && key.ShortTag() == "!!merge" {
			if err := w.merge(n.Content[i+1], o, path); err != nil {
				return err
			}
		}
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		if key.Kind == yaml.ScalarNode && key.ShortTag() == "!!merge" {
			continue
		}
		if key.Kind != yaml.ScalarNode || key.ShortTag() != "!!str" {
			return located(key, path, "field names of the %s must be strings, got %s", o.name, describe(key))
		}
		ft, ok := o.fields[key.Value]
		if !ok {
			msg := fmt.Sprintf("unknown field %q in %s", key.Value, o.name)
			if s := suggest(key.Value, o.keys); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
			return &Error{Param: path, Message: msg, Line: key.Line, Column: key.Column}
		}
		if seen[key.Value] {
			return located(key, path, "field %q given twice in %s", key.Value, o.name)
		}
		seen[key.Value] = true
		child := key.Value
		if path != "" {
			child = path + "." + key.Value
		}
		if err := w.walk(val, ft, child); err != nil {
			return err
		}
	}
	w.pos[path] = at(n)
	return nil
}

// merge checks the mapping, or list of mappings, of a merge key as fields of o.
func (w *walker) merge(n *yaml.Node, o *object, path string) error {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.SequenceNode {
		return w.object(n, o, path)
	}
	for _, m := range n.Content {
		if err := w.merge(m, o, path); err != nil {
			return err
		}
	}
	return nil
}

// scalar checks a scalar node against a string, integer, boolean or number field.
func scalar(n *yaml.Node, t reflect.Type, path string) error {
	want, tags := "", []string(nil)
	switch t.Kind() {
	case reflect.String:
		want, tags = "a string", []string{"!!str"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		want, tags = "an integer", []string{"!!int"}
	case reflect.Bool:
		want, tags = "true or false", []string{"!!bool"}
	case reflect.Float32, reflect.Float64:
		want, tags = "a number", []string{"!!int", "!!float"}
	default:
		return nil
	}
	ok := n.Kind == yaml.ScalarNode
	if ok {
		tag := n.ShortTag()
		ok = tag == tags[0] || (len(tags) > 1 && tag == tags[1])
	}
	if ok && t.Kind() != reflect.String {
		ok = n.Decode(reflect.New(t).Interface()) == nil // in range
	}
	if !ok {
		return located(n, path, "must be %s, got %s", want, describe(n))
	}
	return nil
}

// describe names what a node holds, for an error message.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "an object"
	case yaml.SequenceNode:
		return "a list"
	}
	if n.ShortTag() == "!!str" {
		return strconv.Quote(n.Value)
	}
	return n.Value
}
