// Package openapi holds the gateway's machine-readable contract: one embedded OpenAPI 3.1.1
// document (openapi.json), served as-is at /openapi.json, and a validator that checks real
// responses against the document's JSON Schema 2020-12 schemas.
//
// The document is the single source of truth for the wire shapes; the validator reads it and
// never duplicates a shape in Go. Edit openapi.json by hand and run
// `go test ./dataplane/openapi`: the tests lint the document (references, operation IDs,
// statuses and headers the interface requires, OpenAPI object fields) and compile every
// schema as JSON Schema 2020-12.
package openapi

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed openapi.json
var document []byte

// Document returns the raw bytes of the embedded OpenAPI document. The slice is shared:
// callers must not modify it.
func Document() []byte { return document }

// docURL names the document as a JSON Schema resource; it is never fetched.
const docURL = "urn:sekgate:openapi.json"

// Sentinel errors of the validator.
var (
	// ErrUnknownPath: the path matches no path of the document (and is not an unknown-path 404).
	ErrUnknownPath = errors.New("openapi: path not in the document")
	// ErrUnknownOperation: the path has no such method (and the status is not 405).
	ErrUnknownOperation = errors.New("openapi: operation not in the document")
	// ErrUndocumentedStatus: the operation does not list the status.
	ErrUndocumentedStatus = errors.New("openapi: status not documented for the operation")
	// ErrUndocumentedContentType: the response does not list the content type.
	ErrUndocumentedContentType = errors.New("openapi: content type not documented for the response")
	// ErrInvalidBody: the body does not match the documented schema or shape.
	ErrInvalidBody = errors.New("openapi: body does not match the document")
	// ErrInvalidHeader: a documented header is missing or does not match its schema.
	ErrInvalidHeader = errors.New("openapi: header does not match the document")
)

var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Spec is the compiled document. It is safe for concurrent use.
type Spec struct {
	doc      map[string]any
	schemas  map[string]*jsonschema.Schema // by JSON pointer into the document
	names    []string                      // component schema names, sorted
	paths    []string                      // path templates, sorted
	prefixes []string                      // x-gateway-unsupported-prefixes
}

// Compile decodes the embedded document and compiles, as JSON Schema 2020-12 with format
// assertions, every schema it holds: component schemas, parameter, header, request and
// response schemas, and the per-event schemas of server-sent event streams (x-sse-data).
func Compile() (*Spec, error) { return compile(document) }

func compile(raw []byte) (*Spec, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("openapi: decode document: %w", err)
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("openapi: document is not a JSON object")
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(docURL, doc); err != nil {
		return nil, fmt.Errorf("openapi: add document: %w", err)
	}
	s := &Spec{doc: doc, schemas: map[string]*jsonschema.Schema{}}
	for _, ptr := range schemaPointers(doc) {
		sch, err := c.Compile(docURL + "#" + encodePointer(ptr))
		if err != nil {
			return nil, fmt.Errorf("openapi: compile %s: %w", ptr, err)
		}
		s.schemas[ptr] = sch
	}
	for name := range asMap(asMap(doc["components"])["schemas"]) {
		s.names = append(s.names, name)
	}
	sort.Strings(s.names)
	for p := range asMap(doc["paths"]) {
		s.paths = append(s.paths, p)
	}
	sort.Strings(s.paths)
	for _, p := range asSlice(doc["x-gateway-unsupported-prefixes"]) {
		if str, ok := p.(string); ok {
			s.prefixes = append(s.prefixes, str)
		}
	}
	return s, nil
}

// SchemaNames returns the names of the component schemas, sorted.
func (s *Spec) SchemaNames() []string { return append([]string(nil), s.names...) }

// Paths returns the path templates of the document, sorted.
func (s *Spec) Paths() []string { return append([]string(nil), s.paths...) }

// ValidateSchema validates a JSON body against the component schema of that name
// (e.g. "Error", "ChatCompletionRequest").
func (s *Spec) ValidateSchema(name string, body []byte) error {
	sch := s.schemas["/components/schemas/"+escapeToken(name)]
	if sch == nil {
		return fmt.Errorf("openapi: no component schema %q", name)
	}
	return validateJSON(sch, body)
}

// MatchPath maps a concrete request path (e.g. /v1/models/m1) to its path template
// (/v1/models/{model}). Concrete templates win over templated ones, fewer parameters over
// more. A path under an unsupported family maps to the family's root template when no
// template matches it exactly. ok is false when nothing matches.
func (s *Spec) MatchPath(path string) (template string, ok bool) {
	if _, ok := asMap(s.doc["paths"])[path]; ok {
		return path, true
	}
	segs := strings.Split(path, "/")
	best, bestParams := "", -1
	for _, t := range s.paths {
		tsegs := strings.Split(t, "/")
		if len(tsegs) != len(segs) {
			continue
		}
		params := 0
		match := true
		for i, ts := range tsegs {
			if strings.HasPrefix(ts, "{") && strings.HasSuffix(ts, "}") {
				if segs[i] == "" {
					match = false
					break
				}
				params++
				continue
			}
			if ts != segs[i] {
				match = false
				break
			}
		}
		if match && (bestParams < 0 || params < bestParams) {
			best, bestParams = t, params
		}
	}
	if bestParams >= 0 {
		return best, true
	}
	if root := s.unsupportedRoot(path); root != "" {
		return root, true
	}
	return "", false
}

// unsupportedRoot returns the template that documents an unsupported path: the family
// root for /v1/<family>/..., a stored-object template for /v1/responses/... and
// /v1/chat/completions/....
func (s *Spec) unsupportedRoot(path string) string {
	for _, p := range s.prefixes {
		if strings.HasSuffix(p, "/") {
			if strings.HasPrefix(path, p) && len(path) > len(p) {
				return p + "{id}"
			}
			continue
		}
		if path == p || strings.HasPrefix(path, p+"/") {
			return p
		}
	}
	return ""
}

// ValidateResponse checks one response against the document. method is an HTTP method,
// pathTemplate a path of the document (a concrete path is matched with MatchPath), status
// the HTTP status, contentType the Content-Type header (parameters ignored).
//
// Rules beyond a plain lookup:
//   - A method the path does not declare, answered 405, is checked against
//     components/responses/MethodNotAllowed.
//   - A method an unsupported path does not declare, answered 501, is checked against
//     components/responses/NotSupported; so is any child of an unsupported family.
//   - A path the document does not know, answered 404, is checked against
//     components/responses/NotFound (endpoint_not_found).
//   - HEAD responses must have an empty body; their content is not validated.
//   - A response without content must have an empty body.
//   - JSON media types are validated as JSON; text/event-stream is parsed as server-sent
//     events and the data of every event (except the [DONE] sentinel) is validated against
//     the media type's x-sse-data schema; other media types validate the body as a string.
func (s *Spec) ValidateResponse(method, pathTemplate string, status int, contentType string, body []byte) error {
	ctx := fmt.Sprintf("%s %s %d", strings.ToUpper(method), pathTemplate, status)
	respPtr, err := s.responsePointer(method, pathTemplate, status)
	if err != nil {
		return fmt.Errorf("%s: %w", ctx, err)
	}
	resp := asMap(s.at(respPtr))
	if strings.EqualFold(method, http.MethodHead) {
		if len(body) != 0 {
			return fmt.Errorf("%s: %w: HEAD response has a %d-byte body", ctx, ErrInvalidBody, len(body))
		}
		return nil
	}
	content := asMap(resp["content"])
	if len(content) == 0 {
		if len(body) != 0 {
			return fmt.Errorf("%s: %w: response documents no content, got %d bytes", ctx, ErrInvalidBody, len(body))
		}
		return nil
	}
	mt, key, err := mediaType(content, contentType)
	if err != nil {
		return fmt.Errorf("%s: %w", ctx, err)
	}
	mtPtr := respPtr + "/content/" + escapeToken(key)
	switch {
	case mt == "text/event-stream":
		err = s.validateSSE(mtPtr, body)
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		sch := s.schemas[mtPtr+"/schema"]
		if sch == nil {
			return nil
		}
		err = validateJSON(sch, body)
	default:
		sch := s.schemas[mtPtr+"/schema"]
		if sch == nil {
			return nil
		}
		if verr := sch.Validate(string(body)); verr != nil {
			err = fmt.Errorf("%w: %v", ErrInvalidBody, verr)
		}
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", ctx, mt, err)
	}
	return nil
}

// ValidateHeaders checks the headers of one response: every header the document marks
// required must be present, and every documented header that is present must match its
// schema (integer schemas are checked against the value parsed as a JSON number).
func (s *Spec) ValidateHeaders(method, pathTemplate string, status int, h http.Header) error {
	ctx := fmt.Sprintf("%s %s %d", strings.ToUpper(method), pathTemplate, status)
	respPtr, err := s.responsePointer(method, pathTemplate, status)
	if err != nil {
		return fmt.Errorf("%s: %w", ctx, err)
	}
	hdrs := asMap(asMap(s.at(respPtr))["headers"])
	names := make([]string, 0, len(hdrs))
	for n := range hdrs {
		names = append(names, n)
	}
	sort.Strings(names)
	var errs []error
	for _, name := range names {
		hptr := s.deref(respPtr + "/headers/" + escapeToken(name))
		hdr := asMap(s.at(hptr))
		vals := h.Values(name)
		if len(vals) == 0 {
			if req, _ := hdr["required"].(bool); req {
				errs = append(errs, fmt.Errorf("%w: %s missing", ErrInvalidHeader, name))
			}
			continue
		}
		sch := s.schemas[hptr+"/schema"]
		if sch == nil {
			continue
		}
		var v any = vals[0]
		if t := typeOf(asMap(hdr["schema"])); t == "integer" || t == "number" {
			n, perr := jsonschema.UnmarshalJSON(strings.NewReader(vals[0]))
			if perr != nil {
				errs = append(errs, fmt.Errorf("%w: %s %q is not a number", ErrInvalidHeader, name, vals[0]))
				continue
			}
			v = n
		}
		if verr := sch.Validate(v); verr != nil {
			errs = append(errs, fmt.Errorf("%w: %s %q: %v", ErrInvalidHeader, name, vals[0], verr))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %w", ctx, errors.Join(errs...))
	}
	return nil
}

// responsePointer finds the (dereferenced) JSON pointer of the response object documented
// for method, path and status.
func (s *Spec) responsePointer(method, path string, status int) (string, error) {
	m := strings.ToLower(method)
	template, ok := s.MatchPath(path)
	if !ok {
		if status == http.StatusNotFound {
			return "/components/responses/NotFound", nil
		}
		return "", fmt.Errorf("%w: %s", ErrUnknownPath, path)
	}
	opPtr := "/paths/" + escapeToken(template) + "/" + m
	op := asMap(s.at(opPtr))
	if op == nil {
		unsupported, _ := asMap(s.at("/paths/" + escapeToken(template)))["x-gateway-unsupported"].(bool)
		if unsupported && status == http.StatusNotImplemented {
			// Every method on an unsupported path is refused alike.
			return "/components/responses/NotSupported", nil
		}
		if status == http.StatusMethodNotAllowed {
			return "/components/responses/MethodNotAllowed", nil
		}
		return "", fmt.Errorf("%w: %s %s", ErrUnknownOperation, strings.ToUpper(method), template)
	}
	resps := asMap(op["responses"])
	code := strconv.Itoa(status)
	for _, k := range []string{code, code[:1] + "XX", "default"} {
		if _, ok := resps[k]; ok {
			return s.deref(opPtr + "/responses/" + k), nil
		}
	}
	documented := make([]string, 0, len(resps))
	for k := range resps {
		documented = append(documented, k)
	}
	sort.Strings(documented)
	return "", fmt.Errorf("%w: %d (documented: %s)", ErrUndocumentedStatus, status, strings.Join(documented, ", "))
}

func validateJSON(sch *jsonschema.Schema, body []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: not JSON: %v", ErrInvalidBody, err)
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidBody, err)
	}
	return nil
}

// mediaType picks the documented media type for a Content-Type: exact, then type/*, then */*.
func mediaType(content map[string]any, contentType string) (mt, key string, err error) {
	mt, _, perr := mime.ParseMediaType(contentType)
	if perr != nil {
		return "", "", fmt.Errorf("%w: %q", ErrUndocumentedContentType, contentType)
	}
	typ, _, _ := strings.Cut(mt, "/")
	for _, k := range []string{mt, typ + "/*", "*/*"} {
		if _, ok := content[k]; ok {
			return mt, k, nil
		}
	}
	keys := make([]string, 0, len(content))
	for k := range content {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return "", "", fmt.Errorf("%w: %q (documented: %s)", ErrUndocumentedContentType, mt, strings.Join(keys, ", "))
}

// at returns the value at a JSON pointer of the document, or nil.
func (s *Spec) at(ptr string) any { return lookup(s.doc, ptr) }

// deref follows OpenAPI $ref chains (local ones) starting at ptr.
func (s *Spec) deref(ptr string) string {
	for i := 0; i < 16; i++ {
		r, ok := asMap(s.at(ptr))["$ref"].(string)
		if !ok || !strings.HasPrefix(r, "#/") {
			return ptr
		}
		ptr = refPointer(r)
	}
	return ptr
}

func lookup(doc any, ptr string) any {
	if ptr == "" {
		return doc
	}
	cur := doc
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = unescapeToken(tok)
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

// schemaPointers lists the JSON pointers of every schema location in the document.
func schemaPointers(doc map[string]any) []string {
	var out []string
	comps := asMap(doc["components"])
	for name := range asMap(comps["schemas"]) {
		out = append(out, "/components/schemas/"+escapeToken(name))
	}
	for name, p := range asMap(comps["parameters"]) {
		if asMap(p)["schema"] != nil {
			out = append(out, "/components/parameters/"+escapeToken(name)+"/schema")
		}
	}
	for name, h := range asMap(comps["headers"]) {
		if asMap(h)["schema"] != nil {
			out = append(out, "/components/headers/"+escapeToken(name)+"/schema")
		}
	}
	for name, r := range asMap(comps["responses"]) {
		out = append(out, responseSchemaPointers("/components/responses/"+escapeToken(name), asMap(r))...)
	}
	for p, item := range asMap(doc["paths"]) {
		pp := "/paths/" + escapeToken(p)
		out = append(out, paramSchemaPointers(pp, asMap(item))...)
		for _, m := range methods {
			op := asMap(asMap(item)[m])
			if op == nil {
				continue
			}
			opp := pp + "/" + m
			out = append(out, paramSchemaPointers(opp, op)...)
			for ct, media := range asMap(asMap(op["requestBody"])["content"]) {
				if asMap(media)["schema"] != nil {
					out = append(out, opp+"/requestBody/content/"+escapeToken(ct)+"/schema")
				}
			}
			for code, r := range asMap(op["responses"]) {
				out = append(out, responseSchemaPointers(opp+"/responses/"+escapeToken(code), asMap(r))...)
			}
		}
	}
	sort.Strings(out)
	return out
}

func paramSchemaPointers(base string, holder map[string]any) []string {
	var out []string
	for i, p := range asSlice(holder["parameters"]) {
		if asMap(p)["schema"] != nil {
			out = append(out, base+"/parameters/"+strconv.Itoa(i)+"/schema")
		}
	}
	return out
}

func responseSchemaPointers(base string, r map[string]any) []string {
	var out []string
	for name, h := range asMap(r["headers"]) {
		if asMap(h)["schema"] != nil {
			out = append(out, base+"/headers/"+escapeToken(name)+"/schema")
		}
	}
	for ct, media := range asMap(r["content"]) {
		mp := base + "/content/" + escapeToken(ct)
		if asMap(media)["schema"] != nil {
			out = append(out, mp+"/schema")
		}
		if asMap(media)["x-sse-data"] != nil {
			out = append(out, mp+"/x-sse-data")
		}
	}
	return out
}

func typeOf(schema map[string]any) string {
	t, _ := schema["type"].(string)
	return t
}

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }

func asSlice(v any) []any { s, _ := v.([]any); return s }

// refPointer turns a local "#/a/b" reference into the pointer "/a/b" (URL-decoded).
func refPointer(ref string) string {
	frag := strings.TrimPrefix(ref, "#")
	if dec, err := url.PathUnescape(frag); err == nil {
		return dec
	}
	return frag
}

func escapeToken(t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}

func unescapeToken(t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
}

// encodePointer percent-encodes each token of a JSON pointer for use in a URI fragment.
func encodePointer(ptr string) string {
	toks := strings.Split(ptr, "/")
	for i, t := range toks {
		toks[i] = url.PathEscape(t)
	}
	return strings.Join(toks, "/")
}
