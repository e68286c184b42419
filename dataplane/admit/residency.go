package admit

import (
	"fmt"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/residency"
)

// nodeAdmission refuses accounts whose residency policy does not admit the country the
// node runs in (Config.Country), so that a request's bytes are served only by a node inside
// the account's policy. The refusal names the base URL of the region that serves the
// account's policy, in its message and as its documentation_url: the node's own
// Config.RegionURLs entry for the policy when it has one, else the control plane's (the
// snapshot's region_urls).
type nodeAdmission struct {
	country  string
	override map[string]string
	refuse   map[string]*apierror.Error // policy -> 403 naming no URL; nil map: every account admitted
}

func newNodeAdmission(country string, override map[string]string) nodeAdmission {
	if country == "" {
		return nodeAdmission{}
	}
	a := nodeAdmission{country: country, override: override, refuse: map[string]*apierror.Error{}}
	for _, p := range []string{residency.SE, residency.EU, residency.Any} {
		if !residency.Satisfies(p, country) {
			a.refuse[p] = apierror.New(403, apierror.TypePermission, apierror.CodeResidencyUnsatisfied, a.message(p))
		}
	}
	return a
}

func (a nodeAdmission) message(p string) string {
	return fmt.Sprintf("this gateway node runs in %s, outside the account's residency policy %q", a.country, p)
}

// check returns the refusal for an account of policy p, or nil when the node may serve it.
// Unknown policies are refused by a node that knows its country. idx is the snapshot the
// request is served from (its region URLs).
func (a nodeAdmission) check(p string, idx *index.Index) *apierror.Error {
	if a.refuse == nil {
		return nil
	}
	e, ok := a.refuse[p]
	if !ok {
		if !residency.Valid(p) {
			return ErrResidency
		}
		return nil
	}
	u := a.override[p]
	if u == "" && idx != nil {
		u = idx.Snapshot.RegionURLs[p]
	}
	if u == "" {
		return e
	}
	// A refusal is not the hot path: built per request, so a new snapshot's URLs apply at once.
	return apierror.New(403, apierror.TypePermission, apierror.CodeResidencyUnsatisfied,
		a.message(p)+"; send its requests to "+u).WithDoc(u)
}
