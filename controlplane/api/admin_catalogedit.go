package api

import (
	"encoding/json"
	"math"
	"net/http"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/controlplane/catalog"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Single catalogue edits between loads (store/catalog_edit.go). Each is audited with the
// target as it was (auditBefore) and as it is after (the answer), and publishes a new
// snapshot as a load does. A later catalogue load replaces them: the file is the truth.

// patchModel is PATCH /admin/v1/models/{id}: a model's prices.
func (s *server) patchModel(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Input  json.RawMessage `json:"input_ore_per_million_tokens"`
		Output json.RawMessage `json:"output_ore_per_million_tokens"`
	}
	if !decodeJSON(w, r, adminBodyLimit, &in) {
		return
	}
	var p store.ModelPrices
	var ok bool
	if p.Input, ok = price(w, "input_ore_per_million_tokens", in.Input); !ok {
		return
	}
	if p.Output, ok = price(w, "output_ore_per_million_tokens", in.Output); !ok {
		return
	}
	if p.Input == nil && p.Output == nil {
		writeError(w, invalid("body", "Give input_ore_per_million_tokens, output_ore_per_million_tokens or both."))
		return
	}
	m, err := s.cfg.Store.SetModelPrices(r.Context(), r.PathValue("id"), p)
	if err != nil {
		s.storeError(w, r, err, "model")
		return
	}
	writeJSON(w, http.StatusOK, modelJSON(m))
}

// price reads an optional price: a non-negative whole number (absent: nil).
func price(w http.ResponseWriter, param string, raw json.RawMessage) (*int64, bool) {
	if len(raw) == 0 {
		return nil, true
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil || n < 0 || string(raw) == "null" {
		writeError(w, invalid(param, "%s must be a non-negative whole number (öre per million tokens).", param))
		return nil, false
	}
	return &n, true
}

// modelJSON is a model as GET /admin/v1/models lists it.
func modelJSON(m catalog.Model) adminapi.Model {
	out := adminapi.Model{Model: m.Model, Aliases: m.Aliases, Routes: m.Routes}
	if out.Aliases == nil {
		out.Aliases = []string{}
	}
	if out.Routes == nil {
		out.Routes = []snapshot.Route{}
	}
	return out
}

// patchRoute is PATCH /admin/v1/routes/{id}: a route's weight, priority and state.
func (s *server) patchRoute(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Weight   json.RawMessage `json:"weight"`
		Priority json.RawMessage `json:"priority"`
		State    *string         `json:"state"`
	}
	if !decodeJSON(w, r, adminBodyLimit, &in) {
		return
	}
	p := store.RoutePatch{State: in.State}
	var ok bool
	if p.Weight, ok = wholeNumber(w, "weight", in.Weight, 1); !ok {
		return
	}
	if p.Priority, ok = wholeNumber(w, "priority", in.Priority, math.MinInt32); !ok {
		return
	}
	if in.State != nil && (*in.State == "" || !snapshot.KnownRouteState(*in.State)) {
		writeError(w, invalid("state", "state must be one of enabled, disabled, draining."))
		return
	}
	if p.Weight == nil && p.Priority == nil && p.State == nil {
		writeError(w, invalid("body", "Give weight, priority, state or several of them."))
		return
	}
	rt, err := s.cfg.Store.UpdateRoute(r.Context(), r.PathValue("id"), p)
	if err != nil {
		s.storeError(w, r, err, "route")
		return
	}
	writeJSON(w, http.StatusOK, adminapi.NewPatchedRoute(rt))
}

// wholeNumber reads an optional whole number from least to math.MaxInt32 (absent: nil).
func wholeNumber(w http.ResponseWriter, param string, raw json.RawMessage, least int) (*int, bool) {
	if len(raw) == 0 {
		return nil, true
	}
	var n int
	if err := json.Unmarshal(raw, &n); err != nil || n < least || n > math.MaxInt32 || string(raw) == "null" {
		if least > 0 {
			writeError(w, invalid(param, "%s must be a whole number of at least %d.", param, least))
		} else {
			writeError(w, invalid(param, "%s must be a whole number.", param))
		}
		return nil, false
	}
	return &n, true
}
