package api_test

import (
	"strings"
	"testing"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/internalapi"
)

// The breakers and problems a node reports of a discovered route's replicas (route IDs
// "<route>@<ip:port>") show under that route in the route listing, by address.
func TestReplicaReportsListedUnderTheirRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustStatus(e.admin("PUT", "/admin/v1/catalog", testCatalog), 200)
	path := "/internal/v1/snapshot?have=0&hash=" + strings.Repeat("0", 64) + "&issued=0"
	e.mustStatus(e.do("GET", path, nodeToken, nil, map[string]string{
		internalapi.HeaderNodeID:        "node-r",
		internalapi.HeaderBreakers:      "llama-se%4010.0.0.6%3A8000=open&llama-se%4010.0.0.5%3A8000=half-open",
		internalapi.HeaderRouteProblems: "llama-se%4010.0.0.6%3A8000=unreachable",
	}), 200)
	var routes adminapi.List[adminapi.ListedRoute]
	e.mustStatus(e.admin("GET", "/admin/v1/routes", nil), 200).json(t, &routes)
	for _, r := range routes.Data {
		switch r.ID {
		case "llama-se":
			if len(r.Replicas) != 2 {
				t.Fatalf("llama-se replicas %+v", r.Replicas)
			}
			a, b := r.Replicas[0], r.Replicas[1]
			if a.ID != "llama-se@10.0.0.5:8000" || a.Address != "10.0.0.5:8000" || a.Breakers["node-r"] != "half-open" || len(a.Problems) != 0 {
				t.Errorf("first replica %+v", a)
			}
			if b.Address != "10.0.0.6:8000" || b.Breakers["node-r"] != "open" || b.Problems["node-r"] != internalapi.ProblemUnreachable {
				t.Errorf("second replica %+v", b)
			}
		default:
			if len(r.Replicas) != 0 {
				t.Errorf("route %s lists replicas %+v", r.ID, r.Replicas)
			}
		}
	}
}
