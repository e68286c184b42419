package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/snapshot"
)

// lastAudit is the newest audit entry about target.
func (e *env) lastAudit(t *testing.T, target string) adminapi.AuditEntry {
	t.Helper()
	var page adminapi.AuditPage
	e.mustStatus(e.admin("GET", "/admin/v1/audit?target="+target+"&limit=1", nil), 200).json(t, &page)
	if len(page.Data) != 1 {
		t.Fatalf("audit entries of %s: %+v", target, page.Data)
	}
	return page.Data[0]
}

// field is one top-level field of a JSON object, as JSON text.
func field(t *testing.T, obj json.RawMessage, name string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		t.Fatalf("%s: %v", obj, err)
	}
	return string(m[name])
}

// waitSnapshot long-polls the nodes' snapshot as a node does (it holds the last one seen
// and waits for a newer), until ok holds: the publisher compiles changes after a short
// debounce. It fails when no snapshot satisfies ok within 10 s.
func (e *env) waitSnapshot(t *testing.T, ok func(snapshot.Snapshot) bool) {
	t.Helper()
	var snap snapshot.Snapshot
	have, hash, issued := int64(0), strings.Repeat("0", 64), int64(0)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		r := e.node("GET", fmt.Sprintf("/internal/v1/snapshot?have=%d&hash=%s&issued=%d&wait=2", have, hash, issued), "")
		if r.status == http.StatusNotModified {
			continue // nothing newer within the wait
		}
		e.mustStatus(r, 200).json(t, &snap)
		if ok(snap) {
			return
		}
		sh, err := snapshot.StructureHash(&snap.Content)
		if err != nil {
			t.Fatal(err)
		}
		have, hash, issued = snap.Version, sh, snap.IssuedAt.UnixNano()
	}
	t.Fatalf("snapshot never showed the change: models %+v routes %+v accounts %+v", snap.Models, snap.Routes, snap.Accounts)
}

// A model's prices change one at a time or both, are audited with the model before and
// after, and reach the snapshot; bad prices are refused and change nothing.
func TestAdminPatchModelPrices(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustStatus(e.admin("PUT", "/admin/v1/catalog", testCatalog), 200)
	var m adminapi.Model
	e.mustStatus(e.admin("PATCH", "/admin/v1/models/llama-3.1-8b", map[string]any{"output_ore_per_million_tokens": 450}), 200).json(t, &m)
	if m.InputOrePerMillion != 150 || m.OutputOrePerMillion != 450 || len(m.Routes) != 1 || len(m.Aliases) != 2 {
		t.Fatalf("patched %+v", m)
	}
	a := e.lastAudit(t, "llama-3.1-8b")
	if a.Action != "PATCH /admin/v1/models/{id}" || a.Status != 200 ||
		field(t, a.Before, "output_ore_per_million_tokens") != "300" || field(t, a.After, "output_ore_per_million_tokens") != "450" ||
		field(t, a.Before, "input_ore_per_million_tokens") != "150" || field(t, a.After, "input_ore_per_million_tokens") != "150" {
		t.Fatalf("audit %+v before %s after %s", a, a.Before, a.After)
	}
	e.mustStatus(e.admin("PATCH", "/admin/v1/models/llama-3.1-8b", map[string]any{"input_ore_per_million_tokens": 0, "output_ore_per_million_tokens": 90}), 200).json(t, &m)
	if m.InputOrePerMillion != 0 || m.OutputOrePerMillion != 90 {
		t.Fatalf("patched both %+v", m)
	}
	e.waitSnapshot(t, func(s snapshot.Snapshot) bool {
		for _, sm := range s.Models {
			if sm.ID == "llama-3.1-8b" {
				return sm.InputOrePerMillion == 0 && sm.OutputOrePerMillion == 90
			}
		}
		return false
	})

	for _, tt := range []struct {
		name  string
		body  any
		param string
	}{
		{"negative", map[string]any{"input_ore_per_million_tokens": -1}, "input_ore_per_million_tokens"},
		{"fraction", map[string]any{"output_ore_per_million_tokens": 1.5}, "output_ore_per_million_tokens"},
		{"string", map[string]any{"input_ore_per_million_tokens": "10"}, "input_ore_per_million_tokens"},
		{"null", map[string]any{"output_ore_per_million_tokens": nil}, "output_ore_per_million_tokens"},
		{"nothing", map[string]any{}, "body"},
		{"unknown field", map[string]any{"input_ore_per_million": 5}, "body"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, param := e.mustStatus(e.admin("PATCH", "/admin/v1/models/llama-3.1-8b", tt.body), 400).errInfo(t)
			if param != tt.param {
				t.Errorf("param %q, want %q", param, tt.param)
			}
		})
	}
	e.mustStatus(e.admin("GET", "/admin/v1/models", nil), 200)
	e.mustStatus(e.admin("PATCH", "/admin/v1/models/no-such-model", map[string]any{"input_ore_per_million_tokens": 1}), 404)
	var list adminapi.List[adminapi.Model]
	e.mustStatus(e.admin("GET", "/admin/v1/models", nil), 200).json(t, &list)
	if got := list.Data[0]; got.ID != "llama-3.1-8b" || got.InputOrePerMillion != 0 || got.OutputOrePerMillion != 90 {
		t.Fatalf("a refused patch changed the model: %+v", got)
	}
}

// A route's weight, priority and state change by a patch, are audited with the route
// before and after, and reach the snapshot; a later load of a file without the state
// enables the route again (the file is the truth).
func TestAdminPatchRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustStatus(e.admin("PUT", "/admin/v1/catalog", testCatalog), 200)
	var rt adminapi.PatchedRoute
	e.mustStatus(e.admin("PATCH", "/admin/v1/routes/embed-de", map[string]any{"weight": 5, "priority": 2}), 200).json(t, &rt)
	if rt.Weight != 5 || rt.Priority != 2 || rt.State != "enabled" || rt.Model != "nomic-embed" {
		t.Fatalf("patched %+v", rt)
	}
	a := e.lastAudit(t, "embed-de")
	if a.Action != "PATCH /admin/v1/routes/{id}" || field(t, a.Before, "weight") != "3" || field(t, a.After, "weight") != "5" ||
		field(t, a.Before, "priority") != "0" || field(t, a.After, "priority") != "2" {
		t.Fatalf("audit %+v before %s after %s", a, a.Before, a.After)
	}
	for _, state := range []string{"draining", "disabled"} {
		e.mustStatus(e.admin("PATCH", "/admin/v1/routes/embed-de", map[string]any{"state": state}), 200).json(t, &rt)
		if rt.State != state || rt.Weight != 5 {
			t.Fatalf("set %s: %+v", state, rt)
		}
	}
	a = e.lastAudit(t, "embed-de")
	if field(t, a.Before, "state") != `"draining"` || field(t, a.After, "state") != `"disabled"` {
		t.Fatalf("state audit before %s after %s", a.Before, a.After)
	}
	e.waitSnapshot(t, func(s snapshot.Snapshot) bool {
		for _, r := range s.Routes {
			if r.ID == "embed-de" {
				return r.State == snapshot.RouteDisabled && r.Weight == 5 && r.Priority == 2
			}
		}
		return false
	})
	var cat struct {
		Models []struct {
			Routes []snapshot.Route `json:"routes"`
		} `json:"models"`
	}
	e.mustStatus(e.admin("GET", "/admin/v1/catalog", nil), 200).json(t, &cat)
	if r := cat.Models[1].Routes[0]; r.State != "disabled" {
		t.Fatalf("export without the state: %+v", r)
	}

	for _, tt := range []struct {
		name  string
		body  any
		param string
	}{
		{"zero weight", map[string]any{"weight": 0}, "weight"},
		{"fraction weight", map[string]any{"weight": 2.5}, "weight"},
		{"string priority", map[string]any{"priority": "high"}, "priority"},
		{"null weight", map[string]any{"weight": nil}, "weight"},
		{"unknown state", map[string]any{"state": "paused"}, "state"},
		{"empty state", map[string]any{"state": ""}, "state"},
		{"nothing", map[string]any{}, "body"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, param := e.mustStatus(e.admin("PATCH", "/admin/v1/routes/embed-de", tt.body), 400).errInfo(t)
			if param != tt.param {
				t.Errorf("param %q, want %q", param, tt.param)
			}
		})
	}
	e.mustStatus(e.admin("PATCH", "/admin/v1/routes/no-such-route", map[string]any{"state": "enabled"}), 404)

	e.mustStatus(e.admin("PUT", "/admin/v1/catalog", testCatalog), 200)
	var routes adminapi.List[adminapi.ListedRoute]
	e.mustStatus(e.admin("GET", "/admin/v1/routes", nil), 200).json(t, &routes)
	for _, r := range routes.Data {
		if r.ID == "embed-de" && (r.State != "" || r.Weight != 3 || r.Priority != 0) {
			t.Fatalf("a load kept the edits: %+v", r.Route)
		}
	}
}
