package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/snapshot"
)

// The catalogue page's single edits: a model's prices, a route's weight and state (the
// admin API's PATCH /admin/v1/models/{id} and /admin/v1/routes/{id}). The IDs travel in
// the form, not the path: a model ID may hold a slash.

const catalogueBack = "/console/catalogue"

// setPrices handles a model's price form.
func (c *Console) setPrices(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PostFormValue("model")
	in, okIn := orePrice(r.PostFormValue("input"))
	out, okOut := orePrice(r.PostFormValue("output"))
	if !okIn || !okOut {
		c.failed(w, r, catalogueBack, "Prices must be whole numbers of öre per million tokens, 0 or more.")
		return
	}
	req := adminapi.PatchModelRequest{InputOrePerMillion: &in, OutputOrePerMillion: &out}
	if st, msg := c.api(r, s, http.MethodPatch, "/admin/v1/models/"+url.PathEscape(id), req, nil); st != http.StatusOK {
		c.failed(w, r, catalogueBack, msg)
		return
	}
	c.done(w, r, catalogueBack, fmt.Sprintf("Prices of %s set to %d öre (input) and %d öre (output) per million tokens.", id, in, out))
}

func orePrice(s string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return n, err == nil && n >= 0
}

// setRoute handles a route's weight and state form.
func (c *Console) setRoute(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PostFormValue("route")
	weight, ok := atoi(strings.TrimSpace(r.PostFormValue("weight")))
	if !ok || weight < 1 {
		c.failed(w, r, catalogueBack, "The weight must be a whole number of at least 1.")
		return
	}
	state := r.PostFormValue("state")
	if state == "" || !snapshot.KnownRouteState(state) {
		c.failed(w, r, catalogueBack, "The state must be enabled, disabled or draining.")
		return
	}
	req := adminapi.PatchRouteRequest{Weight: &weight, State: &state}
	if st, msg := c.api(r, s, http.MethodPatch, "/admin/v1/routes/"+url.PathEscape(id), req, nil); st != http.StatusOK {
		c.failed(w, r, catalogueBack, msg)
		return
	}
	c.done(w, r, catalogueBack, fmt.Sprintf("Route %s: weight %d, %s.", id, weight, state))
}
