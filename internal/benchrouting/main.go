// Package benchrouting is `make bench-routing`: four vLLM-like simulator replicas
// (internal/simulator's engine) behind a data-plane node, and the same open-loop Poisson
// arrivals (same seed) replayed against each routing policy and two client-side
// references, for four workloads. It reports time to first token, end-to-end time,
// prefix-cache hit rate, errors and 429s per policy, as routing.json, routing.md and a
// plot, routing.svg.
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

func run(args []string) error {
	fs := flag.NewFlagSet("benchrouting", flag.ContinueOnError)
	out := fs.String("out", "bench-results", "directory for routing.json, routing.md and routing.svg")
	secs := fs.Float64("seconds", 12, "arrivals per run, in seconds (the first quarter warms the caches and is not counted)")
	from := fs.String("from", "", "render routing.md and routing.svg from this routing.json; runs nothing")
	only := fs.String("only", "", "comma-separated workloads to run (a,b,c,d; default all)")
	seed := fs.Uint64("seed", 28, "arrival schedule seed")
	policies := fs.String("policies", "", "comma-separated policies to run (routing names or pin, fewest; default all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *from != "" {
		js, err := os.ReadFile(*from)
		if err != nil {
			return err
		}
		var results []Result
		if err := json.Unmarshal(js, &results); err != nil {
			return fmt.Errorf("%s: %w", *from, err)
		}
		return report(*out, results, *secs)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	d := time.Duration(*secs * float64(time.Second))
	var results []Result
	for _, w := range Workloads() {
		if *only != "" && !slices.Contains(strings.Split(*only, ","), w.Name) {
			continue
		}
		arrivals := w.schedule(d, *seed)
		for _, p := range Policies {
			if *policies != "" && !slices.Contains(strings.Split(*policies, ","), p.Routing+p.Client) {
				continue
			}
			r, err := runOne(ctx, w, p, arrivals)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", w.Name, p.Name, err)
			}
			fmt.Fprintf(os.Stderr, "%s %-26s ttft p50 %6.0f p90 %6.0f p99 %6.0f ms  e2e p50 %6.0f  hits %3.0f %%  quiet p90 %6.0f  errors %d 429 %d of %d\n",
				w.Name, p.Name, r.TTFTp50, r.TTFTp90, r.TTFTp99, r.E2Ep50, 100*r.PrefixHitRate, r.QuietTTFTp90, r.Errors, r.Throttled, r.Requests)
			results = append(results, r)
		}
		if b := w.Baseline; b != nil {
			p := Policies[3] // the default, without the burst
			r, err := runOne(ctx, b, p, b.schedule(d, *seed))
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "%s %-26s quiet p90 %6.0f ms\n", b.Name, p.Name, r.QuietTTFTp90)
			results = append(results, r)
		}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	js, _ := json.MarshalIndent(results, "", "  ")
	if err := os.WriteFile(filepath.Join(*out, "routing.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	return report(*out, results, *secs)
}

// report writes results as routing.md (also printed) and routing.svg into dir.
func report(dir string, results []Result, secs float64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	md := table(results, secs)
	fmt.Print(md)
	if err := os.WriteFile(filepath.Join(dir, "routing.md"), []byte(md), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "routing.svg"), []byte(plotSVG(results)), 0o644)
}

// table renders results as a Markdown table.
func table(results []Result, secs float64) string {
	var b strings.Builder
	titles := workloadTitles()
	fmt.Fprintf(&b, "Arrivals over %.0f s per run (same seed for every policy; the first quarter warms the caches and is not counted). Times in ms.\n\n", secs)
	b.WriteString("| workload | policy | TTFT p50 | p90 | p99 | e2e p50 | prefix hits | quiet tenant TTFT p90 | errors | 429 | requests |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		quiet := "–"
		if r.QuietTTFTp90 > 0 {
			quiet = fmt.Sprintf("%.0f", r.QuietTTFTp90)
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f %% | %s | %d | %d | %d |\n", titles[r.Workload], r.Policy,
			r.TTFTp50, r.TTFTp90, r.TTFTp99, r.E2Ep50, 100*r.PrefixHitRate, quiet, r.Errors, r.Throttled, r.Requests)
	}
	return b.String()
}
