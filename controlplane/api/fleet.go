package api

import (
	"net/http"
	"unicode/utf8"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/internalapi"
)

// fleetBodyLimit bounds a node's fleet report (MaxFleetEntries short entries of each kind).
const fleetBodyLimit = 16 << 20

// postFleet is POST /internal/v1/fleet: a node's demand per limited key and account and
// the capacity it learned per route, answered with its shares and the fleet's capacity
// (controlplane/shares). Nothing is stored.
func (s *server) postFleet(w http.ResponseWriter, r *http.Request) {
	node, ok := nodeID(r)
	if !ok {
		writeError(w, invalid(internalapi.HeaderNodeID, "The %s header is required (at most 200 characters).", internalapi.HeaderNodeID))
		return
	}
	var rep internalapi.FleetReport
	if !decodeBody(w, r, fleetBodyLimit, &rep, false) {
		return
	}
	if rep.IntervalMs < 10 || rep.IntervalMs > 600_000 || rep.WindowMs < 0 {
		writeError(w, invalid("interval_ms", "interval_ms must be between 10 and 600000 and window_ms not negative"))
		return
	}
	if !validFleetReport(rep) {
		writeError(w, invalid("entries", "at most %d accounts, keys and routes each and %d flows, with IDs of 1 to 200 characters and counts not negative",
			internalapi.MaxFleetEntries, internalapi.MaxFleetFlows))
		return
	}
	writeJSON(w, http.StatusOK, s.cfg.Fleet.Report(node, rep))
}

func validFleetReport(rep internalapi.FleetReport) bool {
	validID := func(id string) bool { return id != "" && len(id) <= 200 && utf8.ValidString(id) }
	if len(rep.Region) > 200 || !utf8.ValidString(rep.Region) {
		return false
	}
	switch rep.StartFeed {
	case "", internalapi.StartFeedLive, internalapi.StartFeedSplit:
	default:
		return false
	}
	for _, ds := range [][]internalapi.FleetDemand{rep.Accounts, rep.Keys} {
		if len(ds) > internalapi.MaxFleetEntries {
			return false
		}
		for _, d := range ds {
			if !validID(d.ID) || d.Attempts < 0 || d.InFlight < 0 {
				return false
			}
		}
	}
	if len(rep.Routes) > internalapi.MaxFleetEntries {
		return false
	}
	for _, x := range rep.Routes {
		if !validID(x.RouteID) || x.Slots < 0 {
			return false
		}
	}
	if len(rep.Flows) > internalapi.MaxFleetFlows {
		return false
	}
	for _, f := range rep.Flows {
		if !validID(f.Account) || f.InFlight < 0 || f.Weight < 0 {
			return false
		}
	}
	return true
}

// addFleetModes fills in how each node enforces limits, as its fleet reports tell.
func (s *server) addFleetModes(nodes []adminapi.Node) {
	modes := s.cfg.Fleet.Modes()
	for i := range nodes {
		if m, ok := modes[nodes[i].NodeID]; ok {
			mode, at, feed := m.Mode, m.ReportedAt.UTC(), m.StartFeed
			if feed == "" {
				feed = "off"
			}
			nodes[i].LimitsMode, nodes[i].FleetReportedAt, nodes[i].StartFeed = &mode, &at, &feed
		}
	}
}
