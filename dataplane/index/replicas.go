package index

import (
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/sekgate/gateway/shared/residency"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Replica is one server behind a discovered route (snapshot.Route.Discovery), as the
// node's resolver found it.
type Replica struct {
	// Addr is the address to dial: ip:port.
	Addr string
	// Host is the name it was found under, host:port: the Host header of its requests and,
	// over TLS, the server name its certificate is checked against.
	Host string
}

// Replicas maps a discovered route's ID to its replicas, sorted by Addr. A discovered
// route without an entry has no replica and serves nothing.
type Replicas map[string][]Replica

// Equal reports whether r and o give the same replicas to every route.
func (r Replicas) Equal(o Replicas) bool {
	if len(r) != len(o) {
		return false
	}
	for id, l := range r {
		if m, ok := o[id]; !ok || !slices.Equal(l, m) {
			return false
		}
	}
	return true
}

// Discovered returns the snapshot's discovered routes (their replicas come from DNS).
func (x *Index) Discovered() []snapshot.Route { return x.discovered }

// Replicas returns the replicas x was built with (shared: must not be modified).
func (x *Index) Replicas() Replicas { return x.replicas }

// Served returns the routes x serves: the snapshot's routes with each discovered one
// replaced by its replicas (the route checks probe these).
func (x *Index) Served() []snapshot.Route { return x.served }

// replicaRoutes returns the routes of discovered route sr's replicas: each with its own
// ID (snapshot.ReplicaID), base URL and metrics URL at the replica's address, and every
// other field of sr.
func replicaRoutes(sr snapshot.Route, reps []Replica) []snapshot.Route {
	u, err := url.Parse(sr.BaseURL)
	if err != nil { // validated before
		return nil
	}
	out := make([]snapshot.Route, 0, len(reps))
	for _, rep := range reps {
		r := sr
		r.Discovery = ""
		r.ID = snapshot.ReplicaID(sr.ID, rep.Addr)
		r.BaseURL = u.Scheme + "://" + rep.Addr + u.EscapedPath()
		r.MetricsURL = replicaMetricsURL(sr.MetricsURL, u.Scheme, rep.Addr)
		out = append(out, r)
	}
	return out
}

// replicaMetricsURL is the metrics endpoint of the replica at addr: by default its own
// /metrics; an explicit metrics_url with its host replaced by the replica's IP (its port
// kept); "off" stays off.
func replicaMetricsURL(raw, scheme, addr string) string {
	switch raw {
	case snapshot.MetricsOff:
		return raw
	case "":
		return scheme + "://" + addr + "/metrics"
	}
	u, err := url.Parse(raw)
	ip, _, err2 := net.SplitHostPort(addr)
	if err != nil || err2 != nil {
		return snapshot.MetricsOff
	}
	if p := u.Port(); p != "" {
		u.Host = net.JoinHostPort(ip, p)
	} else if net.ParseIP(ip).To4() == nil {
		u.Host = "[" + ip + "]"
	} else {
		u.Host = ip
	}
	return u.String()
}

// indexRoute adds snapshot route sr to its model: itself, or for a discovered route its
// replicas in rep.
func (x *Index) indexRoute(sr snapshot.Route, m *Model, rep Replicas, ids map[string]bool) error {
	if sr.Discovery == "" {
		x.served = append(x.served, sr)
		r, err := newRoute(sr, m)
		if err != nil {
			return err
		}
		m.Routes = append(m.Routes, r)
		return nil
	}
	if err := sr.Validate(); err != nil {
		return invalid("route %q: %v", sr.ID, err)
	}
	x.discovered = append(x.discovered, sr)
	m.discovered = append(m.discovered, sr)
	reps := rep[sr.ID]
	if len(reps) > 0 {
		if x.replicas == nil {
			x.replicas = Replicas{}
		}
		x.replicas[sr.ID] = reps
	}
	for i, rr := range replicaRoutes(sr, reps) {
		if ids[rr.ID] {
			continue // reserved form: catalogue route IDs never take it
		}
		ids[rr.ID] = true
		x.served = append(x.served, rr)
		id := rr.ID
		rr.ID = sr.ID // validated under its route's ID: its own has the reserved form
		r, err := newRoute(rr, m)
		if err != nil {
			return err
		}
		r.ID, r.Parent = id, sr.ID
		r.UpstreamHost = reps[i].Host
		if r.UpstreamTLS {
			r.ServerName, _, _ = net.SplitHostPort(reps[i].Host)
		}
		m.Routes = append(m.Routes, r)
	}
	return nil
}

// discoveredEndpoints has bit e set when a discovered route of m within residency policy
// pol serves endpoint e, replicas or not: a model whose replicas are all gone for a while
// stays listed and known to its accounts, and its requests find no route (503) rather
// than no model (404).
func (m *Model) discoveredEndpoints(pol string) uint8 {
	var have uint8
	for _, d := range m.discovered {
		if !residency.Satisfies(pol, strings.ToUpper(d.Country)) {
			continue
		}
		for _, p := range d.Protocols {
			if e, ok := EndpointOf(p); ok {
				have |= 1 << e
				if d.Translate && e == EPChat {
					have |= 1<<EPMessages | 1<<EPResponses
				}
			}
		}
	}
	return have
}

// AwaitsReplicas reports whether endpoint e has no candidate under policy p only because
// the discovered routes that serve it have no replica now (the node answers 503, not 400).
func (m *Model) AwaitsReplicas(p string, e Endpoint) bool {
	i := policyIndex(p)
	return i >= 0 && e < numEndpoints && len(m.byPolicy[i][e]) == 0 && m.discoveredEndpoints(p)&(1<<e) != 0
}
