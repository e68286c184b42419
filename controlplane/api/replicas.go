package api

import (
	"net/http"
	"sort"
	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/snapshot"
)

// replicaReports gathers what nodes report of the replicas of discovered routes (route
// IDs "<route>@<ip:port>"): their breakers not closed (reported within the last day) and
// their problems (routeProblems' map, by route ID then node), by discovered route, each
// route's replicas sorted by address.
func (s *server) replicaReports(r *http.Request, problems map[string]map[string]string) (map[string][]adminapi.ListedReplica, error) {
	breakers, err := s.cfg.Store.ListNodeBreakers(r.Context())
	if err != nil {
		return nil, err
	}
	byID := map[string]*adminapi.ListedReplica{}
	replica := func(id string) *adminapi.ListedReplica {
		rep := byID[id]
		if rep == nil {
			_, addr, _ := snapshot.SplitReplicaID(id)
			rep = &adminapi.ListedReplica{ID: id, Address: addr, Breakers: map[string]string{}, Problems: map[string]string{}}
			byID[id] = rep
		}
		return rep
	}
	for node, b := range breakers {
		if time.Since(b.ReportedAt) > 24*time.Hour {
			continue
		}
		for id, st := range b.States {
			if _, _, ok := snapshot.SplitReplicaID(id); ok {
				replica(id).Breakers[node] = st
			}
		}
	}
	for id, byNode := range problems {
		if _, _, ok := snapshot.SplitReplicaID(id); ok {
			for node, p := range byNode {
				replica(id).Problems[node] = p
			}
		}
	}
	out := map[string][]adminapi.ListedReplica{}
	for id, rep := range byID {
		parent, _, _ := snapshot.SplitReplicaID(id)
		out[parent] = append(out[parent], *rep)
	}
	for _, l := range out {
		sort.Slice(l, func(i, j int) bool { return l[i].Address < l[j].Address })
	}
	return out, nil
}
