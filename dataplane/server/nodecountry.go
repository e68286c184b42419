package server

import (
	"fmt"

	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/residency"
)

// nodeAdmission refuses accounts whose residency policy does not admit the country the
// node runs in (Config.Country), so that a request's bytes are served only by a node inside
// the account's policy. Each policy's refusal is built once, naming the base URL of the
// region that serves it (Config.RegionURLs) as its documentation_url.
type nodeAdmission struct {
	country string
	refuse  map[string]*apierror.Error // policy -> 403; nil map: every account admitted
}

func newNodeAdmission(country string, urls map[string]string) nodeAdmission {
	if country == "" {
		return nodeAdmission{}
	}
	a := nodeAdmission{country: country, refuse: map[string]*apierror.Error{}}
	for _, p := range []string{residency.SE, residency.EU, residency.Any} {
		if residency.Satisfies(p, country) {
			continue
		}
		msg := fmt.Sprintf("this gateway node runs in %s, outside the account's residency policy %q", country, p)
		e := apierror.New(403, apierror.TypePermission, apierror.CodeResidencyUnsatisfied, msg)
		if u := urls[p]; u != "" {
			e = apierror.New(403, apierror.TypePermission, apierror.CodeResidencyUnsatisfied, msg+"; send its requests to "+u)
			e = e.WithDoc(u)
		}
		a.refuse[p] = e
	}
	return a
}

// check returns the refusal for an account of policy p, or nil when the node may serve it.
// Unknown policies are refused by a node that knows its country.
func (a nodeAdmission) check(p string) *apierror.Error {
	if a.refuse == nil {
		return nil
	}
	if e, ok := a.refuse[p]; ok {
		return e
	}
	if !residency.Valid(p) {
		return errResidency
	}
	return nil
}
