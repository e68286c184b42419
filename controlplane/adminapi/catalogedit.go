package adminapi

import "github.com/sekgate/gateway/shared/snapshot"

// PatchModelRequest is the body of PATCH /admin/v1/models/{id}: a model's prices in öre per
// million tokens, non-negative whole numbers; an absent price is left as it is.
type PatchModelRequest struct {
	InputOrePerMillion  *int64 `json:"input_ore_per_million_tokens,omitempty"`
	OutputOrePerMillion *int64 `json:"output_ore_per_million_tokens,omitempty"`
}

// PatchRouteRequest is the body of PATCH /admin/v1/routes/{id}; absent fields are left as
// they are. Weight is above 0; State is enabled, disabled or draining.
type PatchRouteRequest struct {
	Weight   *int    `json:"weight,omitempty"`
	Priority *int    `json:"priority,omitempty"`
	State    *string `json:"state,omitempty"`
}

// PatchedRoute is the answer of PATCH /admin/v1/routes/{id}: the route with its state
// always spelt out (enabled included).
type PatchedRoute struct {
	snapshot.Route
	State string `json:"state"`
}

// NewPatchedRoute is r with its state spelt out.
func NewPatchedRoute(r snapshot.Route) PatchedRoute {
	return PatchedRoute{Route: r, State: r.StateName()}
}
