package openapi

import (
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/sekgate/gateway/shared/snapshot"
)

// decoded returns the embedded document as plain JSON values.
func decoded(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(Document(), &doc); err != nil {
		t.Fatalf("document is not valid JSON: %v", err)
	}
	return doc
}

type operation struct {
	path, method string
	op           map[string]any
}

func operations(doc map[string]any) []operation {
	var out []operation
	paths := asMap(doc["paths"])
	keys := make([]string, 0, len(paths))
	for p := range paths {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	for _, p := range keys {
		for _, m := range methods {
			if op := asMap(asMap(paths[p])[m]); op != nil {
				out = append(out, operation{p, m, op})
			}
		}
	}
	return out
}

// security returns the effective security requirement names of an operation.
func security(doc map[string]any, op map[string]any) []string {
	sec, ok := op["security"]
	if !ok {
		sec = doc["security"]
	}
	var names []string
	for _, req := range asSlice(sec) {
		for n := range asMap(req) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// resolve follows a $ref chain to the referenced object.
func resolve(doc map[string]any, v any) map[string]any {
	for i := 0; i < 16; i++ {
		r, ok := asMap(v)["$ref"].(string)
		if !ok {
			return asMap(v)
		}
		v = lookup(doc, refPointer(r))
	}
	return asMap(v)
}

func TestDocumentHeader(t *testing.T) {
	doc := decoded(t)
	if got := doc["openapi"]; got != "3.1.1" {
		t.Errorf("openapi = %v, want 3.1.1", got)
	}
	if got := asMap(doc["info"])["version"]; got != "2026-10-04" {
		t.Errorf("info.version = %v, want 2026-10-04", got)
	}
	if got := doc["jsonSchemaDialect"]; got != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("jsonSchemaDialect = %v", got)
	}
	if title, _ := asMap(doc["info"])["title"].(string); title == "" {
		t.Error("info.title is empty")
	}
}

func TestRefsResolve(t *testing.T) {
	doc := decoded(t)
	n := 0
	var walk func(ptr string, v any)
	walk = func(ptr string, v any) {
		switch c := v.(type) {
		case map[string]any:
			if r, ok := c["$ref"].(string); ok {
				n++
				if !strings.HasPrefix(r, "#/") {
					t.Errorf("%s: $ref %q is not local", ptr, r)
				} else if lookup(doc, refPointer(r)) == nil {
					t.Errorf("%s: $ref %q does not resolve", ptr, r)
				}
			}
			for k, x := range c {
				walk(ptr+"/"+escapeToken(k), x)
			}
		case []any:
			for i, x := range c {
				walk(ptr+"/"+strconv.Itoa(i), x)
			}
		}
	}
	walk("", doc)
	if n < 100 {
		t.Errorf("only %d $refs found; the walker is broken", n)
	}
}

func TestOperationIDsUnique(t *testing.T) {
	doc := decoded(t)
	seen := map[string]string{}
	for _, o := range operations(doc) {
		id, _ := o.op["operationId"].(string)
		if id == "" {
			t.Errorf("%s %s has no operationId", o.method, o.path)
			continue
		}
		if prev, dup := seen[id]; dup {
			t.Errorf("operationId %q used by %s and %s %s", id, prev, o.method, o.path)
		}
		seen[id] = o.method + " " + o.path
		if len(asMap(o.op["responses"])) == 0 {
			t.Errorf("%s %s has no responses", o.method, o.path)
		}
	}
}

var paramRE = regexp.MustCompile(`\{([^}]+)\}`)

func TestPathParametersDeclared(t *testing.T) {
	doc := decoded(t)
	for _, o := range operations(doc) {
		declared := map[string]bool{}
		for _, holder := range []map[string]any{asMap(asMap(doc["paths"])[o.path]), o.op} {
			for _, p := range asSlice(holder["parameters"]) {
				p := resolve(doc, p)
				if p["in"] == "path" {
					if p["required"] != true {
						t.Errorf("%s %s: path parameter %v not required", o.method, o.path, p["name"])
					}
					declared[p["name"].(string)] = true
				}
			}
		}
		for _, m := range paramRE.FindAllStringSubmatch(o.path, -1) {
			if !declared[m[1]] {
				t.Errorf("%s %s: path parameter %q not declared", o.method, o.path, m[1])
			}
		}
	}
}

func TestComponentSchemasCompile(t *testing.T) {
	s, err := Compile()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Model", "Pricing", "ModelList", "Message", "Usage",
		"ChatCompletionRequest", "ChatCompletionResponse", "ChatCompletionChunk",
		"CompletionRequest", "CompletionResponse", "CompletionChunk",
		"EmbeddingRequest", "EmbeddingResponse", "ResponsesRequest", "ResponsesResponse",
		"ResponsesStreamEvent", "MessagesRequest", "MessagesResponse", "MessagesStreamEvent",
		"CountTokensRequest", "TokenCountResponse", "SystemOneRequest", "SystemOneResponse",
		"SystemOneAnswer", "Account", "UsageItem", "RequestRecord", "Routing", "RoutingAttempt",
		"RequestRecordList", "TopupRequest", "TopupResponse", "SignupForm", "WebhookEvent",
		"WebhookResponse", "Error", "ErrorObject", "MessagesError", "NotSupportedError",
	}
	names := s.SchemaNames()
	for _, n := range want {
		if !slices.Contains(names, n) {
			t.Errorf("component schema %s missing", n)
		}
	}
	// Every schema location compiled, component schemas among them.
	for _, n := range names {
		if s.schemas["/components/schemas/"+n] == nil {
			t.Errorf("component schema %s not compiled", n)
		}
	}
	// Every media type of every response has a compiled schema.
	doc := decoded(t)
	for _, o := range operations(doc) {
		for code, r := range asMap(o.op["responses"]) {
			for ct := range asMap(resolve(doc, r)["content"]) {
				if ptr, err := s.responsePointer(o.method, o.path, atoi(t, code)); err != nil {
					t.Errorf("%s %s %s: %v", o.method, o.path, code, err)
				} else if s.schemas[ptr+"/content/"+escapeToken(ct)+"/schema"] == nil {
					t.Errorf("%s %s %s %s: no compiled schema", o.method, o.path, code, ct)
				}
			}
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("response key %q is not a status code", s)
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// The interface's summary table, with the methods each path serves.
var summary = map[string][]string{
	"/healthz":                  {"get", "head", "options"},
	"/v1/models":                {"get", "head", "options"},
	"/v1/models/{model}":        {"get", "head", "options"},
	"/v1/chat/completions":      {"post", "options"},
	"/v1/completions":           {"post", "options"},
	"/v1/embeddings":            {"post", "options"},
	"/v1/responses":             {"post", "options"},
	"/v1/messages":              {"post", "options"},
	"/v1/messages/count_tokens": {"post", "options"},
	"/v1/systemone":             {"post", "options"},
	"/v1/service/account":       {"get", "head", "options"},
	"/v1/service/requests":      {"get", "head", "options"},
	"/v1/service/requests/{id}": {"get", "head", "options"},
	"/v1/service/topup":         {"post", "options"},
	"/v1/service/signup":        {"post"},
	"/v1/stripe/webhook":        {"post", "options"},
	"/openapi.json":             {"get", "head", "options"},
	"/docs":                     {"get", "head", "options"},
}

var publicOps = map[string]bool{
	"get /healthz": true, "head /healthz": true, "post /v1/service/signup": true, "post /v1/stripe/webhook": true,
	"get /openapi.json": true, "head /openapi.json": true, "get /docs": true, "head /docs": true,
}

var inference = []string{
	"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses", "/v1/messages", "/v1/systemone",
}

func TestSummaryPaths(t *testing.T) {
	doc := decoded(t)
	paths := asMap(doc["paths"])
	for p, ms := range summary {
		item := asMap(paths[p])
		if item == nil {
			t.Errorf("path %s missing", p)
			continue
		}
		for _, m := range ms {
			if item[m] == nil {
				t.Errorf("%s %s missing", strings.ToUpper(m), p)
			}
		}
		// x-gateway-allow lists exactly the methods served (not the ones answering only 405).
		var served []string
		for _, m := range methods {
			op := asMap(item[m])
			if op == nil {
				continue
			}
			resps := asMap(op["responses"])
			if _, only405 := resps["405"]; only405 && len(resps) == 1 {
				continue
			}
			served = append(served, strings.ToUpper(m))
		}
		allow, _ := item["x-gateway-allow"].(string)
		got := strings.Split(strings.ReplaceAll(allow, " ", ""), ",")
		sort.Strings(got)
		sort.Strings(served)
		if !slices.Equal(got, served) {
			t.Errorf("%s: x-gateway-allow %q, served methods %v", p, allow, served)
		}
		var want []string
		for _, m := range ms {
			want = append(want, strings.ToUpper(m))
		}
		sort.Strings(want)
		if !slices.Equal(served, want) {
			t.Errorf("%s: served methods %v, want %v", p, served, want)
		}
	}
	// Every path of the document is either in the summary or an unsupported path.
	for p, item := range paths {
		if _, ok := summary[p]; !ok && asMap(item)["x-gateway-unsupported"] != true {
			t.Errorf("path %s is neither in the interface summary nor marked unsupported", p)
		}
	}
}

func TestSecurity(t *testing.T) {
	doc := decoded(t)
	schemes := asMap(asMap(doc["components"])["securitySchemes"])
	if b := asMap(schemes["bearerAuth"]); b["type"] != "http" || b["scheme"] != "bearer" {
		t.Errorf("bearerAuth = %v", b)
	}
	if k := asMap(schemes["apiKeyAuth"]); k["type"] != "apiKey" || k["in"] != "header" || k["name"] != "x-api-key" {
		t.Errorf("apiKeyAuth = %v", k)
	}
	for _, o := range operations(doc) {
		key := o.method + " " + o.path
		sec := security(doc, o.op)
		unsupported := asMap(asMap(doc["paths"])[o.path])["x-gateway-unsupported"] == true
		only405 := len(asMap(o.op["responses"])) == 1 && asMap(o.op["responses"])["405"] != nil
		switch {
		case publicOps[key] || unsupported || o.method == "options" || only405:
			if _, explicit := o.op["security"]; !explicit || len(sec) != 0 {
				t.Errorf("%s must be public with an explicit empty security, got %v", key, sec)
			}
		case o.path == "/v1/messages" || o.path == "/v1/messages/count_tokens":
			if !slices.Equal(sec, []string{"apiKeyAuth", "bearerAuth"}) {
				t.Errorf("%s security = %v, want bearer or x-api-key", key, sec)
			}
		default:
			if !slices.Equal(sec, []string{"bearerAuth"}) {
				t.Errorf("%s security = %v, want bearer", key, sec)
			}
		}
		if len(sec) > 0 && asMap(o.op["responses"])["401"] == nil {
			t.Errorf("%s is authenticated but documents no 401", key)
		}
	}
}

// responseHas reports whether an operation documents status with a required header.
func requiredHeader(doc map[string]any, r map[string]any, name string) bool {
	h := resolve(doc, asMap(r["headers"])[name])
	return h != nil && h["required"] == true
}

func TestStatuses(t *testing.T) {
	doc := decoded(t)
	paths := asMap(doc["paths"])
	want := map[string][]string{}
	for _, p := range inference {
		want["post "+p] = []string{"200", "400", "401", "402", "403", "404", "413", "429", "502", "503", "504"}
	}
	want["post /v1/messages/count_tokens"] = []string{"200", "400", "401", "402", "403", "404", "413"}
	want["get /v1/models/{model}"] = []string{"200", "401", "404"}
	want["get /v1/service/requests"] = []string{"200", "400", "401"}
	want["get /v1/service/requests/{id}"] = []string{"200", "401", "404"}
	want["post /v1/service/topup"] = []string{"200", "400", "401", "413", "502"}
	want["post /v1/service/signup"] = []string{"303", "429"}
	want["get /v1/service/signup"] = []string{"405"}
	want["delete /v1/models/{model}"] = []string{"405"}
	want["post /v1/stripe/webhook"] = []string{"200", "400"}
	want["get /docs"] = []string{"302"}
	want["get /healthz"] = []string{"200"}
	for key, codes := range want {
		m, p, _ := strings.Cut(key, " ")
		resps := asMap(asMap(asMap(paths[p])[m])["responses"])
		for _, c := range codes {
			if resps[c] == nil {
				t.Errorf("%s does not document %s", key, c)
			}
		}
	}
	// Messages-style operations answer errors in the Messages envelope.
	for _, p := range []string{"/v1/messages", "/v1/messages/count_tokens"} {
		for code, r := range asMap(asMap(asMap(paths[p])["post"])["responses"]) {
			if code[0] < '4' {
				continue
			}
			sch := asMap(asMap(asMap(resolve(doc, r)["content"])["application/json"])["schema"])
			if sch["$ref"] != "#/components/schemas/MessagesError" {
				t.Errorf("POST %s %s schema = %v, want MessagesError", p, code, sch)
			}
		}
	}
	for _, o := range operations(doc) {
		key := strings.ToUpper(o.method) + " " + o.path
		authenticated := len(security(doc, o.op)) > 0
		for code, r := range asMap(o.op["responses"]) {
			r := resolve(doc, r)
			if code[0] == '4' || code[0] == '5' {
				if o.method == "head" {
					continue
				}
				if !requiredHeader(doc, r, "X-Request-Id") {
					t.Errorf("%s %s: error without required X-Request-Id", key, code)
				}
				sch, _ := asMap(asMap(asMap(r["content"])["application/json"])["schema"])["$ref"].(string)
				if !slices.Contains([]string{"#/components/schemas/Error", "#/components/schemas/MessagesError", "#/components/schemas/NotSupportedError"}, sch) {
					t.Errorf("%s %s: error body schema %q is not an error envelope", key, code, sch)
				}
			}
			if authenticated && !requiredHeader(doc, r, "X-Request-Id") {
				t.Errorf("%s %s: authenticated response without required X-Request-Id", key, code)
			}
			switch code {
			case "405":
				if !requiredHeader(doc, r, "Allow") {
					t.Errorf("%s 405 without required Allow", key)
				}
			case "503":
				if !requiredHeader(doc, r, "Retry-After") {
					t.Errorf("%s 503 without required Retry-After", key)
				}
			case "429":
				if asMap(r["headers"])["Retry-After"] == nil {
					t.Errorf("%s 429 without Retry-After", key)
				}
			case "204":
				if !requiredHeader(doc, r, "Allow") {
					t.Errorf("%s 204 without required Allow", key)
				}
			case "302", "303":
				if !requiredHeader(doc, r, "Location") {
					t.Errorf("%s %s without required Location", key, code)
				}
			}
		}
		if slices.Contains(inference, o.path) && o.method == "post" {
			ok := asMap(resolve(doc, asMap(o.op["responses"])["200"])["headers"])
			for _, h := range []string{"X-Service-Policy", "X-Service-Provider", "X-Service-Residency"} {
				if ok[h] == nil {
					t.Errorf("%s 200 does not document %s", key, h)
				}
			}
		}
	}
	mna := asMap(asMap(asMap(doc["components"])["responses"])["MethodNotAllowed"])
	if !requiredHeader(doc, mna, "Allow") {
		t.Error("components/responses/MethodNotAllowed lacks a required Allow")
	}
}

func TestOptionsAndHead(t *testing.T) {
	doc := decoded(t)
	paths := asMap(doc["paths"])
	for p, ms := range summary {
		item := asMap(paths[p])
		if slices.Contains(ms, "options") {
			opt := asMap(item["options"])
			if asMap(opt["responses"])["204"] == nil || len(asMap(opt["responses"])) != 1 {
				t.Errorf("OPTIONS %s must answer only 204", p)
			}
		}
		if slices.Contains(ms, "head") {
			head, get := asMap(item["head"]), asMap(item["get"])
			for code, r := range asMap(head["responses"]) {
				if asMap(get["responses"])[code] == nil {
					t.Errorf("HEAD %s documents %s which GET does not", p, code)
				}
				if _, isRef := asMap(r)["$ref"]; !isRef && asMap(r)["content"] != nil {
					t.Errorf("HEAD %s %s documents a body", p, code)
				}
			}
			for code := range asMap(get["responses"]) {
				if asMap(head["responses"])[code] == nil {
					t.Errorf("HEAD %s lacks %s that GET documents", p, code)
				}
			}
		}
	}
}

var families = []string{
	"assistants", "audio", "batches", "containers", "conversations", "evals", "files", "fine_tuning",
	"images", "moderations", "organization", "projects", "realtime", "threads", "uploads",
	"vector_stores", "videos",
}

func TestUnsupportedFamilies(t *testing.T) {
	doc := decoded(t)
	paths := asMap(doc["paths"])
	want := map[string][]string{
		"/v1/responses/{id}":                 {"get", "post", "delete"},
		"/v1/chat/completions/{id}":          {"get", "post", "delete"},
		"/v1/chat/completions/{id}/messages": {"get"},
		"/v1/responses/{id}/input_items":     {"get"},
		"/v1/responses/input_tokens":         {"post"},
		"/v1/responses/compact":              {"post"},
	}
	for _, f := range families {
		want["/v1/"+f] = []string{"get", "post"}
	}
	prefixes := asSlice(doc["x-gateway-unsupported-prefixes"])
	for p, ms := range want {
		item := asMap(paths[p])
		if item == nil {
			t.Errorf("unsupported path %s missing", p)
			continue
		}
		if item["x-gateway-unsupported"] != true {
			t.Errorf("%s not marked x-gateway-unsupported", p)
		}
		for _, m := range ms {
			resps := asMap(asMap(item[m])["responses"])
			if len(resps) != 1 || asMap(resps["501"])["$ref"] != "#/components/responses/NotSupported" {
				t.Errorf("%s %s must answer only 501 NotSupported, got %v", strings.ToUpper(m), p, resps)
			}
		}
		if strings.Count(p, "/") == 2 && !slices.Contains(prefixes, any(p)) {
			t.Errorf("%s not in x-gateway-unsupported-prefixes", p)
		}
	}
	ns := asMap(asMap(asMap(asMap(doc["components"])["responses"])["NotSupported"])["content"])
	if asMap(asMap(ns["application/json"])["schema"])["$ref"] != "#/components/schemas/NotSupportedError" {
		t.Error("NotSupported does not use NotSupportedError")
	}
}

func TestGatewayChoicesDocumented(t *testing.T) {
	doc := decoded(t)
	choices := asMap(doc["x-gateway-choices"])
	for _, k := range []string{"healthz_body", "residency_header", "error_types", "error_codes", "request_list_pagination",
		"systemone_answers", "usage_30d_fields", "request_record_results", "signup_redirects", "cors", "head", "options",
		"request_values"} {
		if choices[k] == nil {
			t.Errorf("x-gateway-choices.%s missing", k)
		}
	}
	// The codes listed are the ones shared/apierror defines (kept in sync by hand; this
	// list is the apierror constants at the time of writing).
	codes := asMap(choices["error_codes"])
	for _, c := range []string{"invalid_api_key", "api_key_expired", "insufficient_quota", "budget_exceeded", "account_suspended",
		"residency_unsatisfiable", "model_not_found", "endpoint_not_found", "request_not_found", "method_not_allowed",
		"endpoint_not_supported", "unsupported_protocol", "request_too_large", "rate_limit_exceeded",
		"concurrency_limit_exceeded", "provider_rate_limited", "provider_error", "no_route_available",
		"provider_timeout", "not_ready", "internal_error", "payment_provider_error", "invalid_signature"} {
		if codes[c] == nil {
			t.Errorf("error code %s not documented", c)
		}
	}
	// Every extension a route can allow is documented, and nothing else.
	values := asMap(choices["request_values"])
	fields := asMap(values["extension_fields"])
	for _, e := range snapshot.Extensions {
		if fields[e] == nil {
			t.Errorf("extension %s not documented in request_values.extension_fields", e)
		}
	}
	if len(fields) != len(snapshot.Extensions) {
		t.Errorf("request_values.extension_fields lists %d fields, shared/snapshot %d", len(fields), len(snapshot.Extensions))
	}
	for _, k := range []string{"text", "numbers", "remote_media", "extensions"} {
		if s, _ := values[k].(string); s == "" {
			t.Errorf("request_values.%s missing", k)
		}
	}
	signup := asMap(asMap(asMap(asMap(doc["paths"])["/v1/service/signup"])["post"])["x-gateway-choices"])
	if len(asMap(signup["error_codes"])) == 0 || signup["accepted"] == nil {
		t.Error("signup redirect mapping not documented")
	}
}

// objectKeys are the fields OpenAPI 3.1 allows on each object (besides x- extensions);
// the official meta-schema closes every object with unevaluatedProperties: false.
var objectKeys = map[string][]string{
	"root":       {"openapi", "info", "jsonSchemaDialect", "servers", "paths", "webhooks", "components", "security", "tags", "externalDocs"},
	"info":       {"title", "summary", "description", "termsOfService", "contact", "license", "version"},
	"license":    {"name", "identifier", "url"},
	"server":     {"url", "description", "variables"},
	"variable":   {"enum", "default", "description"},
	"components": {"schemas", "responses", "parameters", "examples", "requestBodies", "headers", "securitySchemes", "links", "callbacks", "pathItems"},
	"pathItem":   {"$ref", "summary", "description", "servers", "parameters", "get", "put", "post", "delete", "options", "head", "patch", "trace"},
	"operation":  {"tags", "summary", "description", "externalDocs", "operationId", "parameters", "requestBody", "responses", "callbacks", "deprecated", "security", "servers"},
	"parameter":  {"name", "in", "description", "required", "deprecated", "allowEmptyValue", "schema", "content", "style", "explode", "allowReserved", "example", "examples"},
	"body":       {"description", "content", "required"},
	"media":      {"schema", "encoding", "example", "examples"},
	"response":   {"description", "headers", "content", "links"},
	"header":     {"description", "required", "deprecated", "allowEmptyValue", "schema", "style", "explode", "example", "examples", "content"},
	"reference":  {"$ref", "summary", "description"},
	"tag":        {"name", "description", "externalDocs"},
	"security":   {"type", "description", "name", "in", "scheme", "bearerFormat", "flows", "openIdConnectUrl"},
}

var (
	componentNameRE = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)
	responseKeyRE   = regexp.MustCompile(`^([1-5]([0-9][0-9]|XX)|default)$`)
)

func TestOpenAPIObjectFields(t *testing.T) {
	doc := decoded(t)
	check := func(where, kind string, v any) map[string]any {
		obj, ok := v.(map[string]any)
		if !ok {
			t.Errorf("%s: %s is not an object", where, kind)
			return nil
		}
		if _, isRef := obj["$ref"]; isRef && kind != "pathItem" {
			kind = "reference"
		}
		for k := range obj {
			if !strings.HasPrefix(k, "x-") && !slices.Contains(objectKeys[kind], k) {
				t.Errorf("%s: field %q not allowed on a %s object", where, k, kind)
			}
		}
		return obj
	}
	var media func(where string, content any)
	headersOf := func(where string, hs any) {
		for n, h := range asMap(hs) {
			hh := check(where+" header "+n, "header", h)
			if _, isRef := hh["$ref"]; !isRef && hh["schema"] == nil {
				t.Errorf("%s header %s has no schema", where, n)
			}
		}
	}
	response := func(where string, r any) {
		rr := check(where, "response", r)
		if _, isRef := rr["$ref"]; isRef {
			return
		}
		if _, ok := rr["description"].(string); !ok {
			t.Errorf("%s: response without description", where)
		}
		headersOf(where, rr["headers"])
		media(where, rr["content"])
	}
	media = func(where string, content any) {
		for ct, m := range asMap(content) {
			check(where+" "+ct, "media", m)
		}
	}
	root := check("root", "root", doc)
	info := check("info", "info", root["info"])
	if info["license"] != nil {
		lic := check("license", "license", info["license"])
		if (lic["identifier"] == nil) == (lic["url"] == nil) {
			t.Error("license needs exactly one of identifier and url")
		}
	}
	for _, s := range asSlice(root["servers"]) {
		for n, v := range asMap(check("server", "server", s)["variables"]) {
			check("server variable "+n, "variable", v)
		}
	}
	for _, tag := range asSlice(root["tags"]) {
		check("tag", "tag", tag)
	}
	comps := check("components", "components", root["components"])
	for section, entries := range comps {
		for name, v := range asMap(entries) {
			if !componentNameRE.MatchString(name) {
				t.Errorf("components.%s name %q does not match %s", section, name, componentNameRE)
			}
			where := "components." + section + "." + name
			switch section {
			case "responses":
				response(where, v)
			case "parameters":
				check(where, "parameter", v)
			case "headers":
				check(where, "header", v)
			case "securitySchemes":
				check(where, "security", v)
			}
		}
	}
	for p, item := range asMap(root["paths"]) {
		it := check(p, "pathItem", item)
		for _, prm := range asSlice(it["parameters"]) {
			check(p+" parameter", "parameter", prm)
		}
		for _, m := range methods {
			if it[m] == nil {
				continue
			}
			where := strings.ToUpper(m) + " " + p
			op := check(where, "operation", it[m])
			for _, prm := range asSlice(op["parameters"]) {
				check(where+" parameter", "parameter", prm)
			}
			if rb := op["requestBody"]; rb != nil {
				media(where+" requestBody", check(where+" requestBody", "body", rb)["content"])
			}
			for code, r := range asMap(op["responses"]) {
				if !responseKeyRE.MatchString(code) {
					t.Errorf("%s: response key %q", where, code)
				}
				response(where+" "+code, r)
			}
		}
	}
}
