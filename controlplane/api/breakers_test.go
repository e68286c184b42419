package api_test

import (
	"testing"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/internalapi"
)

// A node's breaker report travels with its snapshot poll to the admin node list: absent
// leaves the last report, empty means all closed, an unreadable one is ignored.
func TestNodeBreakers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	poll := func(hdr map[string]string) {
		t.Helper()
		h := map[string]string{internalapi.HeaderNodeID: "node-b"}
		for k, v := range hdr {
			h[k] = v
		}
		e.mustStatus(e.do("GET", internalapi.PathSnapshot+"?have=0&wait=0", nodeToken, nil, h), 200)
	}
	node := func() adminapi.Node {
		t.Helper()
		var l adminapi.List[adminapi.Node]
		e.mustStatus(e.admin("GET", "/admin/v1/nodes", nil), 200).json(t, &l)
		if len(l.Data) != 1 {
			t.Fatalf("nodes %+v", l.Data)
		}
		return l.Data[0]
	}
	poll(nil)
	if n := node(); n.Breakers != nil || n.BreakersReportedAt != nil {
		t.Fatalf("never reported: %+v", n)
	}
	poll(map[string]string{internalapi.HeaderBreakers: internalapi.FormatBreakers(map[string]string{"chat-se": "open", "embed-de": "half-open", "x": "closed"})})
	if n := node(); len(n.Breakers) != 2 || n.Breakers["chat-se"] != "open" || n.Breakers["embed-de"] != "half-open" || n.BreakersReportedAt == nil {
		t.Fatalf("reported: %+v", n)
	}
	poll(nil) // a poll without the header keeps the last report
	poll(map[string]string{internalapi.HeaderBreakers: "chat-se=exploded"})
	if n := node(); len(n.Breakers) != 2 {
		t.Fatalf("after polls without a readable report: %+v", n)
	}
	poll(map[string]string{internalapi.HeaderBreakers: ""})
	if n := node(); n.Breakers == nil || len(n.Breakers) != 0 {
		t.Fatalf("all closed: %+v", n)
	}
}
