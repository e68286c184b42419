package api_test

import (
	"encoding/json"
	"testing"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

// A refused catalogue is answered with status 400, the field path as param and the
// problem's line and column in the body at the start of the message.
func TestCatalogErrorsArePlaced(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		name, body, param, message string
	}{
		{"unknown field", "{\"models\": [{\"id\": \"m\",\n  \"input_ore_per_milion_tokens\": 1}]}", "models[0]",
			`line 2, column 3: unknown field "input_ore_per_milion_tokens" in model; did you mean "input_ore_per_million_tokens"?`},
		{"wrong type", "{\"models\": [\n {\"id\": \"m\", \"context_tokens\": \"8k\"}]}", "models[0].context_tokens",
			`line 2, column 32: must be an integer, got "8k"`},
		{"syntax", "{\"models\": [\n {\"id\" \"m\"}]}", "body", `line 2, column 8: malformed catalogue JSON: invalid character '"' after object key`},
		{"validation", "{\"models\": [\n {\"id\": \"m\", \"endpoint\": \"/v1/chat\"}]}", "models[0].endpoint",
			`line 2, column 26: unknown endpoint "/v1/chat"`},
		{"YAML is not taken here", "models: []\n", "body", `line 1, column 1: malformed catalogue JSON: invalid character 'm' looking for beginning of value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.mustStatus(e.admin("PUT", "/admin/v1/catalog", tt.body), 400)
			var env struct {
				Error struct {
					Message string `json:"message"`
					Param   string `json:"param"`
				} `json:"error"`
			}
			r.json(t, &env)
			if env.Error.Message != tt.message || env.Error.Param != tt.param {
				t.Fatalf("answer %q (param %q)\nwant   %q (param %q)", env.Error.Message, env.Error.Param, tt.message, tt.param)
			}
		})
	}
}

// GET /admin/v1/catalog answers what PUT takes: putting it back changes nothing.
func TestCatalogExportRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var empty struct{ Models []any }
	e.mustStatus(e.admin("GET", "/admin/v1/catalog", nil), 200).json(t, &empty)
	if empty.Models == nil || len(empty.Models) != 0 {
		t.Fatalf("empty catalogue exported as %+v", empty)
	}
	e.mustStatus(e.admin("PUT", "/admin/v1/catalog", testCatalog), 200)
	first := e.mustStatus(e.admin("GET", "/admin/v1/catalog", nil), 200).body
	var res adminapi.CatalogResult
	e.mustStatus(e.admin("PUT", "/admin/v1/catalog", string(first)), 200).json(t, &res)
	if res.Models != 2 || res.Routes != 2 {
		t.Fatalf("reloaded export: %+v", res)
	}
	second := e.mustStatus(e.admin("GET", "/admin/v1/catalog", nil), 200).body
	if string(first) != string(second) {
		t.Fatalf("export changed by its own load:\n%s\n%s", first, second)
	}
	var got struct {
		Models []struct {
			ID     string `json:"id"`
			Routes []struct {
				ID, UpstreamModel string
			} `json:"routes"`
		} `json:"models"`
	}
	if err := json.Unmarshal(first, &got); err != nil || len(got.Models) != 2 || got.Models[0].ID != "llama-3.1-8b" || got.Models[1].Routes[0].ID != "embed-de" {
		t.Fatalf("export %s (%v)", first, err)
	}
}

// A dry run changes nothing and is not audited; a load is.
func TestCatalogDryRunNotAudited(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var res adminapi.CatalogResult
	e.mustStatus(e.admin("PUT", "/admin/v1/catalog?dry_run=true", testCatalog), 200).json(t, &res)
	if !res.DryRun || res.Models != 2 {
		t.Fatalf("dry run %+v", res)
	}
	audit := func() []adminapi.AuditEntry {
		var page adminapi.AuditPage
		e.mustStatus(e.admin("GET", "/admin/v1/audit?actor=token", nil), 200).json(t, &page)
		return page.Data
	}
	if es := audit(); len(es) != 0 {
		t.Fatalf("dry run audited: %+v", es)
	}
	var models struct{ Data []any }
	e.mustStatus(e.admin("GET", "/admin/v1/models", nil), 200).json(t, &models)
	if len(models.Data) != 0 {
		t.Fatalf("dry run stored %d models", len(models.Data))
	}
	e.mustStatus(e.admin("PUT", "/admin/v1/catalog", testCatalog), 200)
	es := audit()
	if len(es) != 1 || es[0].Action != "PUT /admin/v1/catalog" || es[0].Status != 200 {
		t.Fatalf("load audited as %+v", es)
	}
	// Other changes are audited whatever their query says.
	e.mustStatus(e.admin("POST", "/admin/v1/accounts?dry_run=true", map[string]string{"customer": "A", "residency": "se"}), 201)
	if es := audit(); len(es) != 2 {
		t.Fatalf("a change with dry_run in its query went unaudited: %d entries", len(es))
	}
}
