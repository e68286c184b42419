package benchrouting

import (
	"fmt"
	"slices"
	"strings"
)

// nodeCounts returns the node counts of results, ascending.
func nodeCounts(results []Result) []int {
	var out []int
	for _, r := range results {
		if n := max(1, r.Nodes); !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// withNodes returns the results of runs with n nodes.
func withNodes(results []Result, n int) []Result {
	var out []Result
	for _, r := range results {
		if max(1, r.Nodes) == n {
			out = append(out, r)
		}
	}
	return out
}

func find(results []Result, nodes int, workload, policy string) *Result {
	for i, r := range results {
		if max(1, r.Nodes) == nodes && r.Workload == workload && r.Policy == policy {
			return &results[i]
		}
	}
	return nil
}

// fleetRow is one line of the fleet table: a measure and how to read it from a run.
type fleetRow struct {
	measure string
	cell    func(rs []Result, nodes int) string
}

const (
	pinName           = "client: tenant pinning"
	fewestName        = "client: fewest in flight"
	fewestProxiedName = "client: fewest in flight, proxied"
)

var fleetRows = []fleetRow{
	{"(a) shared prefixes: default TTFT p90 / p99", func(rs []Result, n int) string {
		return ttft(rs, n, "a", defaultName)
	}},
	{"(a) tenant pinning TTFT p90 / p99", func(rs []Result, n int) string {
		return ttft(rs, n, "a", pinName)
	}},
	{"(a) default ÷ pinning, p90 / p99", func(rs []Result, n int) string {
		d, p := find(rs, n, "a", defaultName), find(rs, n, "a", pinName)
		if d == nil || p == nil || p.TTFTp90 == 0 || p.TTFTp99 == 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f× / %.1f×", d.TTFTp90/p.TTFTp90, d.TTFTp99/p.TTFTp99)
	}},
	{"(a) prefix hits, default / pinning", func(rs []Result, n int) string {
		d, p := find(rs, n, "a", defaultName), find(rs, n, "a", pinName)
		if d == nil || p == nil {
			return "–"
		}
		return fmt.Sprintf("%.0f %% / %.0f %%", 100*d.PrefixHitRate, 100*p.PrefixHitRate)
	}},
	{"(a) replicas per tenant, default / pinning", func(rs []Result, n int) string {
		d, p := find(rs, n, "a", defaultName), find(rs, n, "a", pinName)
		if d == nil || p == nil {
			return "–"
		}
		return fmt.Sprintf("%.1f / %.1f", d.TenantReplicas, p.TenantReplicas)
	}},
	{"(c) hot tenant: default TTFT p90 / p99", func(rs []Result, n int) string {
		return ttft(rs, n, "c", defaultName)
	}},
	{"(c) fewest in flight TTFT p90 / p99, straight to the replicas", func(rs []Result, n int) string {
		return ttft(rs, n, "c", fewestName)
	}},
	{"(c) fewest in flight TTFT p90 / p99, through the same hops", func(rs []Result, n int) string {
		return ttft(rs, n, "c", fewestProxiedName)
	}},
	{"(d) quiet tenant's TTFT p90 under a 10× burst / without it", func(rs []Result, n int) string {
		return quiet(rs, n, "d", "d0")
	}},
	{"(e) quiet accounts' TTFT p90 under a 15× burst / without it", func(rs []Result, n int) string {
		return quiet(rs, n, "e", "e0")
	}},
	{"(e) 429s, of all requests", func(rs []Result, n int) string {
		r := find(rs, n, "e", defaultName)
		if r == nil {
			return "–"
		}
		return fmt.Sprintf("%d of %d", r.Throttled, r.Requests)
	}},
	{"(f) admitted per second, limit 10/s, sending 45/s", func(rs []Result, n int) string {
		r := find(rs, n, "f", defaultName)
		if r == nil {
			return "–"
		}
		return fmt.Sprintf("%.1f", r.AdmittedPerSec)
	}},
}

// quiet is the quiet tenant's TTFT p90 of workload w and of its baseline.
func quiet(rs []Result, n int, w, baseline string) string {
	b, q := find(rs, n, w, defaultName), find(rs, n, baseline, defaultName)
	if b == nil || q == nil {
		return "–"
	}
	return fmt.Sprintf("%.0f / %.0f ms", b.QuietTTFTp90, q.QuietTTFTp90)
}

// ttft is the TTFT p90 and p99 of policy on workload w with n nodes.
func ttft(rs []Result, n int, w, policy string) string {
	return pair(find(rs, n, w, policy), func(r *Result) (float64, float64) { return r.TTFTp90, r.TTFTp99 })
}

func pair(r *Result, get func(*Result) (float64, float64)) string {
	if r == nil {
		return "–"
	}
	a, b := get(r)
	return fmt.Sprintf("%.0f / %.0f ms", a, b)
}

// fleetTable compares the runs of one node and of n nodes (Markdown).
func fleetTable(results []Result, one, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| measure | %s | %s |\n|---|---:|---:|\n", nodesName(one), nodesName(n))
	for _, row := range fleetRows {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", row.measure, row.cell(results, one), row.cell(results, n))
	}
	return b.String()
}

func nodesName(n int) string {
	if n == 1 {
		return "1 node"
	}
	return fmt.Sprintf("%d nodes", n)
}

// replicaTable details where the runs' requests went (Markdown): per replica the requests
// it finished, its prefix-cache hit rate and its waiting queue (mean and peak of 50 ms
// samples); per node the requests the balancer sent it and its fair queue's waits.
func replicaTable(results []Result) string {
	if !slices.ContainsFunc(results, func(r Result) bool { return len(r.Replicas) > 0 }) {
		return ""
	}
	var b strings.Builder
	b.WriteString("| workload | policy | replicas per tenant | requests per replica | prefix hits per replica | waiting, mean (peak) | per node: sent, fair-queue waits (mean ms), 429s |\n")
	b.WriteString("|---|---|---:|---|---|---|---|\n")
	for _, r := range results {
		if len(r.Replicas) == 0 {
			continue
		}
		var reqs, hits, waits, nodes []string
		for _, x := range r.Replicas {
			reqs = append(reqs, fmt.Sprint(x.Requests))
			hits = append(hits, fmt.Sprintf("%.0f %%", 100*x.HitRate))
			waits = append(waits, fmt.Sprintf("%.1f (%d)", x.MeanWaiting, x.PeakWaiting))
		}
		for _, x := range r.NodeStats {
			sent := "all" // one node, no balancer
			if len(r.NodeStats) > 1 {
				sent = fmt.Sprint(x.Sent)
			}
			nodes = append(nodes, fmt.Sprintf("%s, %d (%.0f), %.0f", sent, x.Queued, x.QueueWaitMS, x.Refused))
		}
		node := "–"
		if len(nodes) > 0 {
			node = strings.Join(nodes, "; ")
		}
		fmt.Fprintf(&b, "| %s | %s | %.1f | %s | %s | %s | %s |\n", r.Workload, r.Policy, r.TenantReplicas, strings.Join(reqs, " / "),
			strings.Join(hits, " / "), strings.Join(waits, " / "), node)
	}
	return b.String()
}
