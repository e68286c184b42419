// Package catalog is the operator's model catalogue: the file format loaded with
// PUT /admin/v1/catalog (JSON, or YAML of the same shape in configs/) and its validation.
package catalog

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/sekgate/gateway/shared/snapshot"
)

// Catalog is a set of models with their routes.
type Catalog struct {
	Models []Model `json:"models"`
}

// Model is a catalogue entry: the snapshot's model fields plus its routes.
type Model struct {
	snapshot.Model
	Routes []snapshot.Route `json:"routes"`
}

// Error describes what is wrong with a catalogue; Param names the offending field path.
// Line and Column (1-based) place it in the catalogue's text when it was read from text
// (0 when unknown); File, when set, names that text.
type Error struct {
	Param   string
	Message string
	Line    int
	Column  int
	File    string
}

// Error is "[where: ][param: ]message", where is "file:line:column" with a File and
// "line L, column C" without.
func (e *Error) Error() string {
	s := e.Message
	if e.Param != "" {
		s = e.Param + ": " + s
	}
	if w := e.Where(); w != "" {
		s = w + ": " + s
	}
	return s
}

// Where is the error's place in the text: "catalog.yaml:14:5", "line 14, column 5",
// "line 14", or "" when unknown.
func (e *Error) Where() string {
	switch {
	case e.Line <= 0 && e.File == "":
		return ""
	case e.Line <= 0:
		return e.File
	case e.File != "" && e.Column > 0:
		return fmt.Sprintf("%s:%d:%d", e.File, e.Line, e.Column)
	case e.File != "":
		return fmt.Sprintf("%s:%d", e.File, e.Line)
	case e.Column > 0:
		return fmt.Sprintf("line %d, column %d", e.Line, e.Column)
	}
	return fmt.Sprintf("line %d", e.Line)
}

// ErrInvalid is wrapped by every *Error.
var ErrInvalid = errors.New("invalid catalogue")

func (e *Error) Unwrap() error { return ErrInvalid }

func invalid(param, format string, args ...any) error {
	return &Error{Param: param, Message: fmt.Sprintf(format, args...)}
}

// DecodeJSON reads a JSON catalogue, refusing unknown fields and wrong types with their
// line and column.
func DecodeJSON(r io.Reader) (*Catalog, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read catalogue: %w", err)
	}
	c, _, err := ParseAs(b, FormatJSON)
	return c, err
}

// ParseYAML reads a YAML catalogue of the same shape as the JSON one.
func ParseYAML(b []byte) (*Catalog, error) {
	c, _, err := ParseAs(b, FormatYAML)
	return c, err
}

var (
	countryRe = regexp.MustCompile(`^[A-Z]{2}$`)
	nameRe    = regexp.MustCompile(`^[\x21-\x7e]{1,200}$`) // printable ASCII, no spaces
)

// Validate checks the catalogue and fills defaults: a route's model is its parent's ID and
// a route without protocols speaks the model's endpoint. It returns the first problem.
func (c *Catalog) Validate() error {
	names := map[string]string{} // id or alias -> where it was declared
	routeIDs := map[string]bool{}
	for i := range c.Models {
		m := &c.Models[i]
		p := fmt.Sprintf("models[%d]", i)
		if !nameRe.MatchString(m.ID) {
			return invalid(p+".id", "model id must be 1 to 200 printable characters without spaces")
		}
		if prev, dup := names[m.ID]; dup {
			return invalid(p+".id", "model id %q already used by %s", m.ID, prev)
		}
		names[m.ID] = p + ".id"
		for j, a := range m.Aliases {
			ap := fmt.Sprintf("%s.aliases[%d]", p, j)
			if !nameRe.MatchString(a) {
				return invalid(ap, "alias must be 1 to 200 printable characters without spaces")
			}
			if prev, dup := names[a]; dup {
				return invalid(ap, "alias %q already used by %s", a, prev)
			}
			names[a] = ap
		}
		if m.Aliases == nil {
			m.Aliases = []string{}
		}
		if !snapshot.KnownEndpoint(m.Endpoint) {
			return invalid(p+".endpoint", "unknown endpoint %q", m.Endpoint)
		}
		if m.Created < 0 {
			return invalid(p+".created", "must be 0 (unknown) or a Unix timestamp")
		}
		if m.ContextTokens < 0 {
			return invalid(p+".context_tokens", "must be positive or 0 (unknown)")
		}
		if m.InputOrePerMillion < 0 {
			return invalid(p+".input_ore_per_million_tokens", "must not be negative")
		}
		if m.OutputOrePerMillion < 0 {
			return invalid(p+".output_ore_per_million_tokens", "must not be negative")
		}
		if !snapshot.KnownRouting(m.Routing) {
			return invalid(p+".routing", "unknown routing %q; known: scored, weighted, least_load, affinity", m.Routing)
		}
		if b := m.OutputBytesPerToken; b != 0 && (b < 2 || b > 32) {
			return invalid(p+".output_bytes_per_token", "must be 2 to 32, or 0 for the default (8)")
		}
		if !snapshot.KnownCacheIsolation(m.CacheIsolation) {
			return invalid(p+".cache_isolation", "unknown cache_isolation %q; known: account, shared", m.CacheIsolation)
		}
		for j := range m.Routes {
			if err := validateRoute(m, j, fmt.Sprintf("%s.routes[%d]", p, j), routeIDs); err != nil {
				return err
			}
		}
		if m.Routes == nil {
			m.Routes = []snapshot.Route{}
		}
	}
	return nil
}

// validateRoute checks route j of model m (its path rp), fills its defaults and records its
// ID in routeIDs.
func validateRoute(m *Model, j int, rp string, routeIDs map[string]bool) error {
	r := &m.Routes[j]
	if !nameRe.MatchString(r.ID) {
		return invalid(rp+".id", "route id must be 1 to 200 printable characters without spaces")
	}
	if routeIDs[r.ID] {
		return invalid(rp+".id", "route id %q is used twice", r.ID)
	}
	routeIDs[r.ID] = true
	if r.Model != "" && r.Model != m.ID {
		return invalid(rp+".model", "route belongs to model %q, not %q", m.ID, r.Model)
	}
	r.Model = m.ID
	if strings.TrimSpace(r.Provider) == "" {
		return invalid(rp+".provider", "provider is required")
	}
	if len(r.Protocols) == 0 {
		r.Protocols = []string{m.Endpoint}
	}
	if r.State == snapshot.RouteEnabled {
		r.State = "" // the snapshot's and the store's spelling
	}
	// The nodes' own check (shared/snapshot): what passes here, nodes accept.
	if err := r.Validate(); err != nil {
		var fe *snapshot.FieldError
		if errors.As(err, &fe) {
			return invalid(rp+"."+fe.Field, "%s", fe.Message)
		}
		return invalid(rp, "%v", err)
	}
	seen := map[string]bool{}
	for k, proto := range r.Protocols {
		if !snapshot.KnownEndpoint(proto) {
			return invalid(fmt.Sprintf("%s.protocols[%d]", rp, k), "unknown endpoint %q", proto)
		}
		if seen[proto] {
			return invalid(fmt.Sprintf("%s.protocols[%d]", rp, k), "protocol %q listed twice", proto)
		}
		seen[proto] = true
	}
	if strings.TrimSpace(r.Region) == "" {
		return invalid(rp+".region", "region is required")
	}
	if !countryRe.MatchString(r.Country) {
		return invalid(rp+".country", "country must be an upper-case ISO 3166-1 alpha-2 code")
	}
	if r.Weight <= 0 {
		return invalid(rp+".weight", "weight must be greater than 0")
	}
	allowed := map[string]bool{}
	for k, e := range r.AllowExtensions {
		ep := fmt.Sprintf("%s.allow_extensions[%d]", rp, k)
		if snapshot.ExtensionIndex(e) < 0 {
			return invalid(ep, "unknown extension %q; known: %s", e, strings.Join(snapshot.Extensions, ", "))
		}
		if allowed[e] {
			return invalid(ep, "extension %q listed twice", e)
		}
		allowed[e] = true
	}
	return nil
}
