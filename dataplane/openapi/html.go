package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Operation is one documented operation as the HTML reference shows it.
type Operation struct {
	Method, Path, Summary, Description string
	Public                             bool     // no key needed
	Statuses                           []string // documented response statuses, sorted
}

// Section is the operations of one tag, in the document's tag order.
type Section struct {
	Tag, Description string
	Operations       []Operation
}

// reference is what the HTML page shows: the document's info and its operations.
type reference struct {
	Title, Version, Summary, Description string
	Base                                 string
	Sections                             []Section
}

var (
	refOnce  sync.Once
	refBase  reference
	refErr   error
	htmlMu   sync.Mutex
	htmlDocs = map[string][]byte{}
)

// HTML renders the document as a page for a person: what the service is, its base URL
// (base), and every operation with its summary, description, key requirement and
// statuses; HEAD and OPTIONS variants and operations that only answer 405 are left out.
// The page is self-contained (no script, style sheet or font from elsewhere) and cached
// per base URL. The slice is shared: callers must not modify it.
func HTML(base string) ([]byte, error) {
	refOnce.Do(func() { refBase, refErr = buildReference(document) })
	if refErr != nil {
		return nil, refErr
	}
	htmlMu.Lock()
	defer htmlMu.Unlock()
	if b, ok := htmlDocs[base]; ok {
		return b, nil
	}
	ref := refBase
	ref.Base = base
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, ref); err != nil {
		return nil, fmt.Errorf("openapi: render reference: %w", err)
	}
	if len(htmlDocs) < maxServed {
		htmlDocs[base] = b.Bytes()
	}
	return b.Bytes(), nil
}

// rawDoc is the part of the document the reference reads.
type rawDoc struct {
	Info struct {
		Title, Version, Summary, Description string
	}
	Tags []struct {
		Name, Description string
	}
	Paths map[string]map[string]json.RawMessage
}

type rawOp struct {
	Tags                 []string
	Summary, Description string
	Security             *[]any
	Responses            map[string]json.RawMessage
}

// buildReference reads the document's info, tags and operations.
func buildReference(doc []byte) (reference, error) {
	var d rawDoc
	if err := json.Unmarshal(doc, &d); err != nil {
		return reference{}, fmt.Errorf("openapi: read document: %w", err)
	}
	ref := reference{Title: d.Info.Title, Version: d.Info.Version, Summary: d.Info.Summary, Description: d.Info.Description}
	byTag := map[string][]Operation{}
	for path, item := range d.Paths {
		for method, raw := range item {
			if method == "head" || method == "options" || !slices.Contains(methods, method) {
				continue
			}
			var op rawOp
			if err := json.Unmarshal(raw, &op); err != nil {
				return reference{}, fmt.Errorf("openapi: read %s %s: %w", method, path, err)
			}
			if _, only405 := op.Responses["405"]; only405 && len(op.Responses) == 1 {
				continue
			}
			o := Operation{Method: strings.ToUpper(method), Path: path, Summary: op.Summary, Description: op.Description,
				Public: op.Security != nil && len(*op.Security) == 0}
			for st := range op.Responses {
				o.Statuses = append(o.Statuses, st)
			}
			sort.Strings(o.Statuses)
			tag := ""
			if len(op.Tags) > 0 {
				tag = op.Tags[0]
			}
			byTag[tag] = append(byTag[tag], o)
		}
	}
	for _, t := range d.Tags {
		ops := byTag[t.Name]
		sort.Slice(ops, func(i, j int) bool {
			if ops[i].Path != ops[j].Path {
				return ops[i].Path < ops[j].Path
			}
			return ops[i].Method < ops[j].Method
		})
		ref.Sections = append(ref.Sections, Section{Tag: t.Name, Description: t.Description, Operations: ops})
	}
	return ref, nil
}
