package conformance

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sekgate/gateway/dataplane/openapi"
)

// Sections "Resources and their fields" and "Versioning".

// Resources: each response is an instance of its resource schema (the transport validates
// every response; this test names each resource once, against its component schema).
func TestResources_EachResourceMatchesItsSchema(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	sp := getSpec(t)
	check := func(schema string, r Response) {
		t.Helper()
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", schema, r.Status, r.Body)
		}
		if err := sp.ValidateSchema(schema, r.Body); err != nil {
			t.Errorf("%s: %v", schema, err)
		}
	}
	check("ModelList", s.Do(t, "GET", "/v1/models", a.Key, nil, nil))
	check("Model", s.Do(t, "GET", "/v1/models/"+modelChat, a.Key, nil, nil))
	check("ChatCompletionResponse", s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat)))
	check("CompletionResponse", s.Post(t, "/v1/completions", a.Key, map[string]any{"model": modelChat, "prompt": "x"}))
	check("EmbeddingResponse", s.Post(t, "/v1/embeddings", a.Key, map[string]any{"model": modelEmbed, "input": "x"}))
	check("ResponsesResponse", s.Post(t, "/v1/responses", a.Key, map[string]any{"model": modelChat, "input": "x"}))
	check("MessagesResponse", s.Post(t, "/v1/messages", a.Key, map[string]any{"model": modelChat, "max_tokens": 8,
		"messages": []any{map[string]any{"role": "user", "content": "x"}}}))
	check("SystemOneResponse", s.Post(t, "/v1/systemone", a.Key, map[string]any{"model": modelSystemOne, "state": "x",
		"questions": map[string]any{"q": map[string]any{"type": "choice", "choices": []string{"a", "b"}}}}))
	check("Account", s.Do(t, "GET", "/v1/service/account", a.Key, nil, nil))
	id := s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat)).Header.Get("X-Request-Id")
	s.waitRecord(t, a, id)
	check("RequestRecord", s.Do(t, "GET", "/v1/service/requests/"+id, a.Key, nil, nil))
	check("RequestRecordList", s.Do(t, "GET", "/v1/service/requests", a.Key, nil, nil))
}

// Resources / Model: constant fields and the model's own fields.
func TestResources_ModelFields(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	m := s.Do(t, "GET", "/v1/models/"+modelChat, a.Key, nil, nil).JSON(t)
	if m["object"] != "model" || m["owned_by"] != "service" || m["endpoint"] != "/v1/chat/completions" ||
		m["created"] != float64(1721347200) || m["context_tokens"] != float64(8192) || m["tokenizer"] != "llama3" {
		t.Fatalf("model %v", m)
	}
	aliases, _ := json.Marshal(m["aliases"])
	if string(aliases) != `["`+aliasChat+`","`+slashAliasChat+`"]` && string(aliases) != `["`+slashAliasChat+`","`+aliasChat+`"]` {
		t.Errorf("aliases %s", aliases)
	}
	eps, _ := json.Marshal(m["endpoints"])
	for _, e := range []string{"/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/messages"} {
		if !strings.Contains(string(eps), `"`+e+`"`) {
			t.Errorf("endpoints %s lack %s", eps, e)
		}
	}
}

// Resources / Request record: request_id is the X-Request-Id of the original request,
// key_id the key's public ID; no prompt or answer content.
func TestResources_RequestRecordFields(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 100, modelChat)
	r := s.Post(t, "/v1/chat/completions", a.Key, map[string]any{"model": aliasChat,
		"messages": []any{map[string]any{"role": "user", "content": "hemligt-innehall-123"}}})
	id := r.Header.Get("X-Request-Id")
	rec := s.waitRecord(t, a, id)
	raw := s.Do(t, "GET", "/v1/service/requests/"+id, a.Key, nil, nil).Body
	if rec.RequestID != id || rec.KeyID == nil || *rec.KeyID != a.KeyID || rec.Model != modelChat || rec.Status != 200 ||
		rec.Result == "" || rec.TS == "" {
		t.Fatalf("record %s", raw)
	}
	if strings.Contains(string(raw), "hemligt") {
		t.Fatal("record holds prompt content")
	}
}

// Versioning rule 1: OpenAPI 3.1.1, version 2026-10-04, served at /openapi.json.
func TestVersioning_ContractIsOpenAPI311Dated(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	doc := s.Do(t, "GET", "/openapi.json", "", nil, nil).JSON(t)
	if doc["openapi"] != "3.1.1" || doc["info"].(map[string]any)["version"] != "2026-10-04" {
		t.Fatalf("openapi %v info %v", doc["openapi"], doc["info"])
	}
}

// Versioning rule 2: inference and account paths carry the prefix /v1.
func TestVersioning_PathsCarryV1Prefix(t *testing.T) {
	sp := getSpec(t)
	for _, p := range sp.Paths() {
		if p == "/healthz" || p == "/openapi.json" || p == "/docs" {
			continue
		}
		if !strings.HasPrefix(p, "/v1/") {
			t.Errorf("path %s lacks /v1", p)
		}
	}
	_ = openapi.Document
}

// Versioning rule 3: aliases are accepted and resolved to the canonical ID.
func TestVersioning_AliasesResolveToCanonicalID(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 100, modelChat)
	r := s.Post(t, "/v1/chat/completions", a.Key, chatReq(slashAliasChat))
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if rec := s.waitRecord(t, a, r.Header.Get("X-Request-Id")); rec.Model != modelChat {
		t.Fatalf("record model %q", rec.Model)
	}
}

// Versioning rule 4: provider extension fields may appear where a schema allows additional
// properties (the simulator's answers carry fields the interface does not name, and they
// validate).
func TestVersioning_ExtensionFieldsAllowed(t *testing.T) {
	sp := getSpec(t)
	body := `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi","reasoning_content":null},"finish_reason":"stop","stop_reason":null}],"usage":{"prompt_tokens":1,"total_tokens":2},"system_fingerprint":"fp","prompt_logprobs":null}`
	if err := sp.ValidateSchema("ChatCompletionResponse", []byte(body)); err != nil {
		t.Fatal(err)
	}
}
