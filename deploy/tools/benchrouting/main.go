// Package benchrouting is `make bench-routing`: four vLLM-like simulator replicas
// (internal/simulator's engine) behind a data-plane node, or behind N nodes of one
// deployment and a round-robin balancer (--nodes), and the same open-loop Poisson
// arrivals (same seed) replayed against each routing policy and two client-side
// references (fewest in flight also through the gateway's hops), for six workloads. It
// reports time to first token, end-to-end time, prefix-cache hit rate, errors and 429s
// per policy, as routing.json, routing.md and a plot, routing.svg.
package benchrouting

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Main runs the benchmark with command-line args.
func Main(args []string) {
	if err := run(args); err != nil {
		fmt.Fprintln(os.Stderr, "benchrouting:", err)
		os.Exit(1)
	}
}

// options are the command line's.
type options struct {
	out, from, only, policies string
	secs                      float64
	seed                      uint64
	nodes                     int
	samples                   bool
	cacheBlocks               int
}

func run(args []string) error {
	fs := flag.NewFlagSet("benchrouting", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.out, "out", "bench-results", "directory for routing.json, routing.md and routing.svg (routing-Nnodes.* with --nodes N)")
	fs.Float64Var(&o.secs, "seconds", 24, "arrivals per run, in seconds (the first quarter warms the caches and is not counted)")
	fs.StringVar(&o.from, "from", "", "render the tables and plots from these comma-separated result files (a one-node and a fleet run add fleet.md); runs nothing")
	fs.StringVar(&o.only, "only", "", "comma-separated workloads to run (a,b,c,d,e,f; default all)")
	fs.Uint64Var(&o.seed, "seed", 28, "arrival schedule seed")
	fs.StringVar(&o.policies, "policies", "", "comma-separated policies to run (routing names or pin, fewest, fewest-proxied; default all)")
	fs.BoolVar(&o.samples, "samples", false, "also write each run's requests (when sent, tenant, status, replica, TTFT, end-to-end time) to samples[-Nnodes]/WORKLOAD-POLICY.csv under --out")
	fs.IntVar(&o.nodes, "nodes", 1, "data-plane nodes of the deployment, behind a round-robin balancer when more than one")
	fs.BoolVar(&warmHomes, "warm-homes", warmHomes, "the nodes' --warm-homes: copies of a tenant's request to the other home of its prefix")
	fs.BoolVar(&startFeed, "start-feed", startFeed, "with several nodes, share their starts on a start feed (a NATS server in the bench, as the control plane's --start-feed-listen)")
	fs.IntVar(&o.cacheBlocks, "cache-blocks", engine.CacheBlocks, "each replica's prefix cache, in blocks of 16 tokens (the default holds about eight of (a)'s sixteen prefixes)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.cacheBlocks < 1 {
		return fmt.Errorf("--cache-blocks %d: at least 1", o.cacheBlocks)
	}
	engine.CacheBlocks = o.cacheBlocks
	if o.nodes < 1 {
		return fmt.Errorf("--nodes %d: at least 1", o.nodes)
	}
	if o.from != "" {
		var results []Result
		for _, f := range strings.Split(o.from, ",") {
			rs, err := readResults(f)
			if err != nil {
				return err
			}
			results = append(results, rs...)
		}
		return report(o.out, results, o.secs)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	results, err := runAll(ctx, o)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	js, _ := json.MarshalIndent(results, "", "  ")
	if err := os.WriteFile(filepath.Join(o.out, "routing"+suffix(o.nodes)+".json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	return report(o.out, results, o.secs)
}

// suffix names the files of a run of n nodes: none for one.
func suffix(n int) string {
	if n <= 1 {
		return ""
	}
	return fmt.Sprintf("-%dnodes", n)
}

func readResults(file string) ([]Result, error) {
	js, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var results []Result
	if err := json.Unmarshal(js, &results); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	for i := range results {
		results[i].Nodes = max(1, results[i].Nodes)
	}
	return results, nil
}

// runAll runs the chosen workloads and policies, printing each result as it comes.
func runAll(ctx context.Context, o options) ([]Result, error) {
	d := time.Duration(o.secs * float64(time.Second))
	var results []Result
	// one runs workload w with policy p, writes its samples when asked and keeps its result.
	one := func(w *Workload, p Policy, arrivals []arrival) error {
		r, err := runOne(ctx, w, p, arrivals, o.nodes)
		if err == nil && o.samples {
			err = writeSamples(o.out, o.nodes, w, p, r.samples)
		}
		if err != nil {
			return fmt.Errorf("%s, %s: %w", w.Name, p.Name, err)
		}
		printResult(r)
		results = append(results, r)
		return nil
	}
	for _, w := range Workloads() {
		if o.only != "" && !slices.Contains(strings.Split(o.only, ","), w.Name) {
			continue
		}
		arrivals := w.schedule(d, o.seed)
		for _, p := range Policies {
			if o.policies != "" && !slices.Contains(strings.Split(o.policies, ","), p.Key()) || !w.runs(p) {
				continue
			}
			if err := one(w, p, arrivals); err != nil {
				return nil, err
			}
		}
		if b := w.Baseline; b != nil {
			// The default policy, without the burst.
			if err := one(b, Policies[3], b.schedule(d, o.seed)); err != nil {
				return nil, err
			}
		}
	}
	return results, nil
}

func printResult(r Result) {
	fmt.Fprintf(os.Stderr, "%s %-33s ttft p50 %6.0f p90 %6.0f p99 %6.0f ms  e2e p50 %6.0f  hits %3.0f %%  quiet p90 %6.0f (429 %d)  admitted/s %4.1f  errors %d 429 %d of %d\n",
		r.Workload, r.Policy, r.TTFTp50, r.TTFTp90, r.TTFTp99, r.E2Ep50, 100*r.PrefixHitRate, r.QuietTTFTp90, r.QuietThrottled, r.AdmittedPerSec, r.Errors, r.Throttled, r.Requests)
}

// report writes results as routing.md (also printed) and routing.svg into dir, per node
// count (routing-Nnodes.* for N > 1), and, when results hold one node and more, the fleet
// table as fleet.md.
func report(dir string, results []Result, secs float64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	counts := nodeCounts(results)
	for _, n := range counts {
		rs := withNodes(results, n)
		md := table(rs, secs) + "\n" + replicaTable(rs)
		fmt.Print(md)
		if err := os.WriteFile(filepath.Join(dir, "routing"+suffix(n)+".md"), []byte(md), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "routing"+suffix(n)+".svg"), []byte(plotSVG(rs)), 0o644); err != nil {
			return err
		}
	}
	if len(counts) < 2 {
		return nil
	}
	md := fleetTable(results, counts[0], counts[len(counts)-1])
	fmt.Print("\n" + md)
	return os.WriteFile(filepath.Join(dir, "fleet.md"), []byte(md), 0o644)
}

// table renders results as a Markdown table.
func table(results []Result, secs float64) string {
	var b strings.Builder
	titles := workloadTitles()
	if n := nodeCounts(results); len(n) == 1 && n[0] > 1 {
		fmt.Fprintf(&b, "%d data-plane nodes behind a round-robin balancer. ", n[0])
	}
	fmt.Fprintf(&b, "Arrivals over %.0f s per run (same seed for every policy; the first quarter warms the caches and is not counted). Times in ms.\n\n", secs)
	b.WriteString("| workload | policy | TTFT p50 | p90 | p99 | e2e p50 | prefix hits | quiet tenants' TTFT p90 (429s) | errors | 429 | requests |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		quiet := "–"
		if r.QuietTTFTp90 > 0 {
			quiet = fmt.Sprintf("%.0f (%d)", r.QuietTTFTp90, r.QuietThrottled)
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f %% | %s | %d | %d | %d |\n", titles[r.Workload], r.Policy,
			r.TTFTp50, r.TTFTp90, r.TTFTp99, r.E2Ep50, 100*r.PrefixHitRate, quiet, r.Errors, r.Throttled, r.Requests)
	}
	return b.String()
}
