package shares

import "github.com/sekgate/gateway/shared/internalapi"

// The fleet's flows: each node reports, per account active in its fair queue, its requests
// in flight and the account's weight (internalapi.FlowLoad), and is answered the other
// live nodes' requests in flight per account and the weight of every account active on
// any live node, so every node judges an account's share of the servers by the whole
// fleet's (dataplane/fairq, docs/routing.md "Fleet").

// flowLoad is one account's flow on one node.
type flowLoad struct{ inFlight, weight int64 }

// flowsOf keeps a report's flows (at most MaxFleetFlows).
func flowsOf(in []internalapi.FlowLoad) map[string]flowLoad {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]flowLoad, min(len(in), internalapi.MaxFleetFlows))
	for _, f := range in {
		if len(out) == internalapi.MaxFleetFlows {
			break
		}
		out[f.Account] = flowLoad{inFlight: max(f.InFlight, 0), weight: max(f.Weight, 1)}
	}
	return out
}

// fleetFlows is node id's view of the fleet's flows: per account, the requests in flight on
// the live nodes other than id (accounts with none left out), and the weight of every
// account some live node reported (the largest reported), each map at most MaxFleetFlows
// accounts.
func fleetFlows(id string, live map[string]*node) (others, weights map[string]int64) {
	for nid, n := range live {
		for acct, f := range n.flows {
			if _, ok := weights[acct]; !ok && len(weights) == internalapi.MaxFleetFlows {
				continue
			}
			if weights == nil {
				weights = make(map[string]int64)
			}
			weights[acct] = max(weights[acct], f.weight)
			if nid == id || f.inFlight == 0 {
				continue
			}
			if others == nil {
				others = make(map[string]int64)
			}
			others[acct] += f.inFlight
		}
	}
	return others, weights
}
