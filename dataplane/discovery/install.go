package discovery

import (
	"errors"
	"slices"
	"time"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/snapshot"
)

// next returns the replicas route r serves after a lookup that found reps or failed
// with err, and keeps st up to date; the caller holds d.mu.
func (d *Discoverer) next(st *route, r *snapshot.Route, reps []index.Replica, err error, now time.Time) []index.Replica {
	log := d.cfg.Logger
	switch {
	case errors.Is(err, errEmpty):
		if st.emptySince.IsZero() {
			st.emptySince = now
			if len(st.good) > 0 && d.cfg.EmptyGrace > 0 {
				log.Warn("route replicas: DNS answered with no records; keeping the last good replicas for a while",
					"route", r.ID, "replicas", len(st.good), "for", d.cfg.EmptyGrace)
			} else if len(st.good) == 0 {
				log.Warn("route replicas: DNS answered with no records; the route has no replica", "route", r.ID)
			}
		}
		if len(st.good) > 0 && (d.cfg.EmptyGrace <= 0 || now.Sub(st.emptySince) >= d.cfg.EmptyGrace) {
			log.Warn("route replicas: DNS still answers with no records; the route has no replica", "route", r.ID)
			st.good = nil
		}
		st.failing = false
	case err != nil:
		if !st.failing {
			log.Warn("route replicas: DNS lookup failed; keeping the last good replicas", "route", r.ID,
				"replicas", len(st.good), "err", err)
			st.failing = true
		}
	default:
		if st.failing || !st.emptySince.IsZero() {
			log.Info("route replicas: DNS answers again", "route", r.ID, "replicas", len(reps))
		}
		st.failing, st.emptySince = false, time.Time{}
		if !slices.Equal(st.good, reps) {
			log.Info("route replicas changed", "route", r.ID, "added", addrs(reps, st.good), "removed", addrs(st.good, reps))
		}
		st.good = reps
	}
	return st.good
}

// addrs lists the addresses of a not in b.
func addrs(a, b []index.Replica) []string {
	var out []string
	for _, r := range a {
		if !slices.ContainsFunc(b, func(o index.Replica) bool { return o.Addr == r.Addr }) {
			out = append(out, r.Addr)
		}
	}
	return out
}

// install builds and installs an index with want when the current one was built with
// other replicas. A snapshot installed meanwhile wins (compare-and-swap), and is checked
// again: its build read the replicas before this resolve, or after.
func (d *Discoverer) install(want index.Replicas) {
	for range 3 {
		x := d.cfg.Store.Load()
		if x == nil || servedBy(x, want) {
			return
		}
		nx, err := d.cfg.Build(x.Snapshot, want)
		if err != nil {
			d.cfg.Logger.Error("route replicas: index not rebuilt", "version", x.Version(), "err", err)
			return
		}
		if d.cfg.Store.CompareAndSwap(x, nx) {
			if d.cfg.OnInstall != nil {
				d.cfg.OnInstall(nx)
			}
			return
		}
	}
}

// servedBy reports whether x serves want's replicas for each of its discovered routes.
func servedBy(x *index.Index, want index.Replicas) bool {
	have := x.Replicas()
	for _, r := range x.Discovered() {
		if !slices.Equal(have[r.ID], want[r.ID]) {
			return false
		}
	}
	return true
}
