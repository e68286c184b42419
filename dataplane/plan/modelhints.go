package plan

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/sekgate/gateway/dataplane/admit"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/outcome"
	"github.com/sekgate/gateway/dataplane/suggest"
	"github.com/sekgate/gateway/shared/apierror"
)

// ModelNotFound is the 404 for a model name the account cannot use. It names up to three
// of the account's visible models whose IDs or aliases are closest to name (one a prefix
// of the other, or a few edits apart), never a model the account cannot see.
func ModelNotFound(p admit.Principal, name string) *apierror.Error {
	if p.Acct == nil || name == "" || len(name) > 200 {
		return ErrModelNotFound
	}
	type near struct {
		id   string
		dist int
	}
	var found []near
	want := suggest.Lower(name)
	limit := max(2, len(want)/3)
	for _, m := range p.Acct.Visible {
		best := modelDistance(want, m.ID, limit)
		for _, a := range m.Aliases {
			best = min(best, modelDistance(want, a, limit))
		}
		if best <= limit {
			found = append(found, near{m.ID, best})
		}
	}
	if len(found) == 0 {
		return ErrModelNotFound
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].dist < found[j].dist })
	ids := make([]string, 0, 3)
	for i := 0; i < len(found) && i < 3; i++ {
		ids = append(ids, found[i].id)
	}
	return apierror.New(404, apierror.TypeNotFound, apierror.CodeModelNotFound,
		fmt.Sprintf("the model does not exist or is not available to this account; did you mean %s?", strings.Join(ids, ", "))).WithParam("model")
}

// minPrefix is the shortest name that matches a longer model name by prefix alone.
const minPrefix = 4

// modelDistance is how far the lower-cased name want is from the model name id: 1 when
// one is a prefix of the other (llama-3.1-8b for llama-3.1-8b-instruct; an exact match in
// another case is 0), else the edit distance, or limit+1 when that exceeds limit.
func modelDistance(want, id string, limit int) int {
	id = suggest.Lower(id)
	if want == id {
		return 0
	}
	if len(want) >= minPrefix && len(id) >= minPrefix && (strings.HasPrefix(id, want) || strings.HasPrefix(want, id)) {
		return 1
	}
	return suggest.Distance(want, id, limit)
}

// WrongEndpoint is the 400 for a model the account may use that no route serves on
// endpoint e (an embeddings model sent to chat completions, say): it names the endpoints
// that do serve it under the account's policy; a 503 when routes discovered from DNS serve
// e but have no replica now. Runs on the error path only.
func WrongEndpoint(p admit.Principal, m *index.Model, e index.Endpoint) *apierror.Error {
	if m.AwaitsReplicas(p.Acct.Residency, e) {
		return outcome.ErrNoRoute // its routes' replicas are gone from DNS for now: retry shortly
	}
	eps := m.Endpoints(p.Acct.Residency)
	if len(eps) == 0 || slices.Contains(eps, e.Path()) {
		return ErrUnsupportedProtocol // nothing to point to
	}
	use := strings.Join(eps, " or ")
	if slices.Contains(eps, m.Endpoint) {
		use = m.Endpoint // the model's primary endpoint, e.g. /v1/embeddings
	}
	return apierror.New(400, apierror.TypeInvalidRequest, apierror.CodeUnsupportedProtocol,
		fmt.Sprintf("the model %s is not served on %s; use %s", m.ID, e.Path(), use)).WithParam("model")
}
