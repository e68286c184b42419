package gatewayctl

import (
	"testing"
	"time"
)

func TestSeriesQueryFromFlags(t *testing.T) {
	for _, tc := range []struct {
		name                        string
		model, route, node, account string
		last, step                  time.Duration
		from, to                    string
		dim, key, wantStep          string
		bad                         bool
	}{
		{name: "defaults", dim: "all"},
		{name: "a model, 5 min steps", model: "m", step: 5 * time.Minute, dim: "model", key: "m", wantStep: "5m0s"},
		{name: "a node", node: "se-sto", dim: "node", key: "se-sto"},
		{name: "two dimensions", model: "m", route: "r", bad: true},
		{name: "last and from", last: time.Hour, from: "2026-11-28T00:00:00Z", bad: true},
		{name: "negative last", last: -time.Hour, bad: true},
		{name: "last before a bad to", last: time.Hour, to: "noon", bad: true},
		{name: "last before to", account: "acct_1", last: time.Hour, to: "2026-11-28T12:00:00Z", dim: "account", key: "acct_1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := seriesQuery(tc.model, tc.route, tc.node, tc.account, tc.last, tc.step, tc.from, tc.to)
			if tc.bad != (err != nil) {
				t.Fatalf("err %v", err)
			}
			if tc.bad {
				return
			}
			if q.Dimension != tc.dim || q.Key != tc.key || q.Step != tc.wantStep {
				t.Fatalf("query %+v", q)
			}
			if tc.to != "" && tc.last > 0 && q.From != "2026-11-28T11:00:00Z" {
				t.Fatalf("from %q", q.From)
			}
		})
	}
}
