package benchrun

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Report holds every figure of a run; it is written as bench.json and summarised in
// summary.md.
type Report struct {
	Mode      string         `json:"mode"`
	Started   time.Time      `json:"started"`
	Elapsed   float64        `json:"elapsed_s"`
	Machine   Machine        `json:"machine"`
	Processes map[string]int `json:"pids"`
	// IdleCPU is each process's CPU seconds per second with no load.
	IdleCPU map[string]float64 `json:"idle_cpu_s_per_s"`
	// IdleMachineBusyPct is how busy the machine was while the stack idled: work of others.
	IdleMachineBusyPct float64             `json:"idle_machine_busy_pct"`
	Fixed              []FixedResult       `json:"fixed_rate"`
	MaxRates           []MaxRate           `json:"max_rate"`
	Streaming          []StreamResult      `json:"streaming"`
	Pacing             []PacingResult      `json:"flush_per_event"`
	OpenStreams        []OpenStreamsResult `json:"open_streams"`
	Checks             []Check             `json:"targets"`
	Notes              []string            `json:"notes,omitempty"`
}

// Check is one of the performance targets with the figure this run measured.
type Check struct {
	Target string `json:"target"`
	Got    string `json:"measured"`
	// Met is nil when the run did not measure it.
	Met *bool `json:"met,omitempty"`
}

func (r *Report) fixed(target, body string, rate int) *FixedResult {
	for i := range r.Fixed {
		if f := &r.Fixed[i]; f.Target == target && f.Body == body && f.Rate == rate {
			return f
		}
	}
	return nil
}

// fixedBounds returns the highest fixed rate target sustained with body and the lowest it
// did not (0 when none).
func (r *Report) fixedBounds(target, body string) (good, bad int) {
	for _, f := range r.Fixed {
		if f.Target != target || f.Body != body {
			continue
		}
		if f.Sustained() {
			good = max(good, f.Rate)
		} else if bad == 0 || f.Rate < bad {
			bad = f.Rate
		}
	}
	return good, bad
}

func (r *Report) stream(target, mode string) *StreamResult {
	for i := range r.Streaming {
		if s := &r.Streaming[i]; s.Target == target && s.Mode == mode {
			return s
		}
	}
	return nil
}

// evaluate fills Checks from the figures, and notes attacks that shared the machine.
func (r *Report) evaluate() {
	r.Checks = nil
	var shared []string
	for _, f := range r.Fixed {
		if f.OtherWorkPct > 10 {
			shared = append(shared, fmt.Sprintf("%s %s %d/s (%.0f%%)", f.Target, f.Body, f.Rate, f.OtherWorkPct))
		}
	}
	if len(shared) > 0 {
		r.Notes = append(r.Notes, "processes outside the benchmark kept the machine more than 10% busy during "+strings.Join(shared, ", ")+"; those figures carry that noise")
	}

	add := func(target string, ok *bool, format string, args ...any) {
		r.Checks = append(r.Checks, Check{Target: target, Got: fmt.Sprintf(format, args...), Met: ok})
	}
	b := func(v bool) *bool { return &v }
	const na = "not measured"
	dp, bare := r.fixed(Dataplane, "1KiB", 2000), r.fixed(Bare, "1KiB", 2000)
	if dp != nil && bare != nil && dp.AddedP50Bare != nil && dp.AddedP99Direct != nil && dp.CPURatioBare != nil {
		add("1 KiB at 2,000/s: p50 added over the bare proxy ≤ 0.1 ms", b(*dp.AddedP50Bare <= 0.1), "%+.3f ms (data plane p50 %.3f, bare %.3f)", *dp.AddedP50Bare, dp.P50, bare.P50)
		add("1 KiB at 2,000/s: p99 added over the direct path ≤ 1 ms", b(*dp.AddedP99Direct <= 1), "%+.3f ms (data plane p99 %.3f)", *dp.AddedP99Direct, dp.P99)
		add("1 KiB at 2,000/s: CPU per request ≤ 1.5× the bare proxy's", b(*dp.CPURatioBare <= 1.5), "%.2f× (%.3f vs %.3f CPU-s per 1,000)", *dp.CPURatioBare, dp.CPUPer1k, bare.CPUPer1k)
	} else {
		add("1 KiB at 2,000/s: added latency and CPU against the bare proxy", nil, na)
	}
	// Observability: the default (metrics and the JSON access log) against the access log
	// off (the metrics alone, the configuration before the access log), and tracing on.
	if quiet, traced := r.fixed(DataplaneQuiet, "1KiB", 2000), r.fixed(DataplaneTraced, "1KiB", 2000); dp != nil && quiet != nil && quiet.CPUPer1k > 0 {
		ratio := dp.CPUPer1k / quiet.CPUPer1k
		add("1 KiB at 2,000/s: the default configuration's CPU per request within 5 % of the access log off", b(ratio <= 1.05),
			"%+.1f %% (%.3f vs %.3f CPU-s per 1,000)", (ratio-1)*100, dp.CPUPer1k, quiet.CPUPer1k)
		if traced != nil {
			add("1 KiB at 2,000/s: tracing every request (informational)", nil, "%+.1f %% CPU over the default (%.3f CPU-s per 1,000)",
				(traced.CPUPer1k/dp.CPUPer1k-1)*100, traced.CPUPer1k)
		}
	}
	if dp5 := r.fixed(Dataplane, "1KiB", 5000); dp5 != nil && dp5.AddedP99Direct != nil {
		held := dp5.SentRate >= 0.95*5000 && dp5.Throughput >= 0.95*5000
		add("5,000/s sustained with < 0.1 % errors", b(held && dp5.ErrorPct < 0.1), "%.0f/s answered, %.3f %% errors", dp5.Throughput, dp5.ErrorPct)
		add("5,000/s: p99 added over the direct path ≤ 2 ms", b(*dp5.AddedP99Direct <= 2), "%+.3f ms (data plane p99 %.3f)", *dp5.AddedP99Direct, dp5.P99)
	} else {
		add("5,000/s sustained", nil, na)
	}
	// Which share of a tail miss is the usage ingest beside the node: the same data plane
	// keeping its usage in its spool (no batch exchange; the control plane and Postgres
	// idle).
	for _, a := range []struct {
		rate  int
		limit float64
		label string
	}{{2000, 1, "2,000"}, {5000, 2, "5,000"}} {
		alone, full := r.fixed(DataplaneAlone, "1KiB", a.rate), r.fixed(Dataplane, "1KiB", a.rate)
		if alone == nil || alone.AddedP99Direct == nil || full == nil || full.AddedP99Direct == nil {
			continue
		}
		cpu := ""
		if alone.CPURatioBare != nil {
			cpu = fmt.Sprintf("; CPU %.2f× the bare proxy's", *alone.CPURatioBare)
		}
		add(fmt.Sprintf("1 KiB at %s/s, the data plane alone (usage kept in its spool; no ingest): p99 added over the direct path ≤ %g ms", a.label, a.limit),
			b(*alone.AddedP99Direct <= a.limit), "%+.3f ms (with them ingesting %+.3f ms)%s", *alone.AddedP99Direct, *full.AddedP99Direct, cpu)
	}
	if s := r.stream(Dataplane, "rate"); s != nil && s.AddedFirstP50Bare != nil {
		add("streaming: time to first byte added over the bare proxy ≤ 0.1 ms at p50", b(*s.AddedFirstP50Bare <= 0.1), "%+.3f ms (data plane %.3f, bare %.3f)", *s.AddedFirstP50Bare, s.FirstP50, s.FirstP50-*s.AddedFirstP50Bare)
	} else {
		add("streaming: time to first byte", nil, na)
	}
	for _, p := range r.Pacing {
		if p.Target == Dataplane {
			add("streaming: every event flushed as it arrives", b(p.Batched == 0 && p.Failed == 0 && p.Gaps > 0), "%d of %d paced gaps batched, %d streams failed", p.Batched, p.Gaps, p.Failed)
		}
	}
	for _, o := range r.OpenStreams {
		if o.Target != Dataplane {
			continue
		}
		switch {
		case o.Opened >= 10000 && o.Failed == 0:
			add("10,000 concurrent open streams within 1 GiB of data-plane RSS", b(o.OpenMiB <= 1024), "%.0f MiB with %d open (%.1f KiB each)", o.OpenMiB, o.Opened, o.PerStreamKiB)
		case o.Opened >= 9000 && o.Failed == 0:
			add("10,000 concurrent open streams within 1 GiB of data-plane RSS", b(o.At10kMiB <= 1024), "%.0f MiB with %d open (%.1f KiB each), %.0f MiB projected at 10,000 (descriptor limit)",
				o.OpenMiB, o.Opened, o.PerStreamKiB, o.At10kMiB)
		default:
			add("10,000 concurrent open streams within 1 GiB of data-plane RSS", nil, "%d of %d open, %d failed; %.0f MiB, %.1f KiB each, projected %.0f MiB at 10,000",
				o.Opened, o.Want, o.Failed, o.OpenMiB, o.PerStreamKiB, o.At10kMiB)
		}
	}
}

// Write writes bench.json, summary.md and latency.png into dir.
func (r *Report) Write(dir string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "bench.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.md"), []byte(r.Markdown()), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "latency.png"))
	if err != nil {
		return err
	}
	if err := r.Plot(f); err != nil {
		f.Close()
		return fmt.Errorf("plot: %w", err)
	}
	return f.Close()
}

func opt(v *float64, format string) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf(format, *v)
}

// Markdown renders the summary: method, the targets, a table per scenario.
func (r *Report) Markdown() string {
	var sb strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) }
	w("# Benchmark results (%s mode)\n\n", r.Mode)
	w("Run %s, %.0f s. Machine: %s, %d cores, %.0f GiB RAM, Linux %s, %s.\n\n",
		r.Started.Format("2006-01-02 15:04 UTC"), r.Elapsed, r.Machine.CPU, r.Machine.Cores, r.Machine.MemGiB, r.Machine.Kernel, r.Machine.Go)
	w("**Method.** One `make bench` run starts the provider simulator (latency knobs at zero), the control plane with a throwaway Postgres, " +
		"a bare fasthttp reverse proxy (`deploy/cmd/bareproxy`: no auth, routing or metering) and a data plane (auth, routing, metering, usage batches to the control plane every 200 ms), " +
		"and drives the same load at three targets in turn: the simulator directly, the bare proxy, the data plane. " +
		"Non-streaming load comes from vegeta's library (constant rate, keep-alive, every latency kept: percentiles are exact); streams from a small client that timestamps every server-sent event. " +
		"CPU is user+system time of the measured process from /proc/<pid>/stat over the attack; peak RSS is VmHWM, reset before each attack. " +
		"All processes - load generator, simulator, proxy or data plane, control plane, Postgres - share the machine's cores, so every figure includes contention; " +
		"\"added\" figures subtract the direct path's (or the bare proxy's) percentile at the same rate in the same run.\n\n")
	if len(r.Notes) > 0 {
		for _, n := range r.Notes {
			w("- Note: %s\n", n)
		}
		w("\n")
	}

	w("## Targets\n\n| target | measured | met |\n|---|---|---|\n")
	for _, c := range r.Checks {
		met := "not measured"
		if c.Met != nil {
			met = map[bool]string{true: "yes", false: "**no**"}[*c.Met]
		}
		w("| %s | %s | %s |\n", c.Target, c.Got, met)
	}
	w("\n")

	bodies := []string{}
	seen := map[string]bool{}
	for _, f := range r.Fixed {
		if !seen[f.Body] {
			seen[f.Body] = true
			bodies = append(bodies, f.Body)
		}
	}
	for _, body := range bodies {
		w("## Non-streaming chat, %s request body, fixed rates\n\n", body)
		w("| rate/s | target | answered/s | errors %% | p50 ms | p90 ms | p99 ms | +p50 vs direct | +p99 vs direct | +p50 vs bare | +p99 vs bare | CPU s/1k req | CPU × bare | sim CPU s/1k | peak RSS MiB |\n")
		w("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, f := range r.Fixed {
			if f.Body != body {
				continue
			}
			w("| %d | %s | %.0f | %.2f | %.3f | %.3f | %.3f | %s | %s | %s | %s | %.3f | %s | %.3f | %.0f |\n",
				f.Rate, f.Target, f.Throughput, f.ErrorPct, f.P50, f.P90, f.P99,
				opt(f.AddedP50Direct, "%+.3f"), opt(f.AddedP99Direct, "%+.3f"), opt(f.AddedP50Bare, "%+.3f"), opt(f.AddedP99Bare, "%+.3f"),
				f.CPUPer1k, opt(f.CPURatioBare, "%.2f"), f.SimCPUPer1k, f.PeakRSSMiB)
		}
		w("\nFor the direct path the CPU and RSS columns are the simulator's own.\n\n")
	}

	if len(r.Fixed) > 0 {
		w("## Where the CPU went (non-streaming)\n\nCPU seconds per 1,000 requests of every process on the machine during each attack, and the share of both cores busy. ")
		w("The load generator is this benchmark's own process; Postgres is the postmaster with its backends. ")
		w("With no load at all the processes used (CPU s per s): %s.\n\n", fmtCPUMap(r.IdleCPU))
		names := []string{"loadgen", "simulator", "bareproxy", "dataplane", "controlplane", "postgres"}
		w("| body | rate/s | target | machine busy %% | of which other work %% | target's CPU in kernel %% | %s |\n|---|---:|---|---:|---:|---:|%s\n", strings.Join(names, " | "), strings.Repeat("---:|", len(names)))
		for _, f := range r.Fixed {
			var cells []string
			for _, n := range names {
				if v, ok := f.CPUByProcess[n]; ok {
					cells = append(cells, fmt.Sprintf("%.3f", v))
				} else {
					cells = append(cells, "–")
				}
			}
			w("| %s | %d | %s | %.0f | %.0f | %.0f | %s |\n", f.Body, f.Rate, f.Target, f.MachineBusyPct, f.OtherWorkPct, f.SysPct, strings.Join(cells, " | "))
		}
		w("\n")
	}

	if len(r.MaxRates) > 0 {
		w("## Highest rate sustained with < 1 %% errors\n\n")
		w("Sustained: sent at ≥ 95 %% of the rate, ≥ 95 %% of it answered successfully per second, < 1 %% errors, p99 under %.0f ms (no growing queue).\n\n", SustainMaxP99)
		w("| body | target | highest sustained rate/s | steps (rate: answered/s, errors %%, p99 ms) |\n|---|---|---:|---|\n")
		for _, m := range r.MaxRates {
			var steps []string
			for _, s := range m.Steps {
				steps = append(steps, fmt.Sprintf("%d: %.0f, %.2f%%, %.2f", s.Rate, s.Throughput, s.ErrorPct, s.P99))
			}
			w("| %s | %s | %d | %s |\n", m.Body, m.Target, m.Sustained, strings.Join(steps, "; "))
		}
		w("\n")
	}

	if len(r.Streaming) > 0 {
		w("## Streaming chat\n\n")
		w("Time to first byte is the time from writing the request to reading the first event (the simulator sends it at once).\n\n")
		w("| load | target | streams | failed | headers p50 ms | TTFB p50 ms | TTFB p90 ms | TTFB p99 ms | +TTFB p50 vs direct | +TTFB p50 vs bare | stream p50 ms | events/s | CPU s/1k streams | CPU × bare | peak RSS MiB |\n")
		w("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, s := range r.Streaming {
			load := fmt.Sprintf("%d streams/s × %d tokens", s.Rate, s.Tokens)
			if s.Mode == "concurrency" {
				load = fmt.Sprintf("%d clients × %d tokens", s.Conc, s.Tokens)
			}
			w("| %s | %s | %d | %d | %.3f | %.3f | %.3f | %.3f | %s | %s | %.2f | %.0f | %.3f | %s | %.0f |\n",
				load, s.Target, s.Streams, s.Failed, s.HeadersP50, s.FirstP50, s.FirstP90, s.FirstP99,
				opt(s.AddedFirstP50Direct, "%+.3f"), opt(s.AddedFirstP50Bare, "%+.3f"), s.TotalP50, s.EventsPerSec, s.CPUPer1k, opt(s.CPURatioBare, "%.2f"), s.PeakRSSMiB)
		}
		w("\n")
	}
	if len(r.Pacing) > 0 {
		w("### Flush per event\n\nThe simulator paces token events %.0f ms apart; a gap under a quarter of that means events were batched on the way.\n\n", r.Pacing[0].GapMS)
		w("| target | streams | paced gaps | batched | gap p1 ms | gap p50 ms | failed |\n|---|---:|---:|---:|---:|---:|---:|\n")
		for _, p := range r.Pacing {
			w("| %s | %d | %d | %d | %.2f | %.2f | %d |\n", p.Target, p.Streams, p.Gaps, p.Batched, p.GapP01, p.GapP50, p.Failed)
		}
		w("\n")
	}
	if len(r.OpenStreams) > 0 {
		w("## Concurrent open streams\n\nEach stream gets its first event at once and then one token per second; RSS is VmRSS once all are open. This scenario runs first, on processes that have served only a warm-up, so memory freed by earlier load does not hide the growth.\n\n")
		w("| target | streams open | failed | open in s | RSS before MiB | RSS open MiB | KiB per stream | projected at 10,000 MiB | upstream open 1 s after clients left | upstream all closed after s |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, o := range r.OpenStreams {
			drain := fmt.Sprintf("%.1f", o.DrainSecs)
			if o.DrainSecs < 0 {
				drain = "not within the wait"
			}
			w("| %s | %d of %d | %d | %.1f | %.0f | %.0f | %.1f | %.0f | %d | %s |\n", o.Target, o.Opened, o.Want, o.Failed, o.OpenSecs, o.BaselineMiB, o.OpenMiB, o.PerStreamKiB, o.At10kMiB, o.LeftOpen, drain)
		}
		w("\nA proxy that notices a departed client only when its next write fails keeps the upstream stream open until the upstream's next events.\n")
		w("\n")
	}
	var errs []string
	for _, f := range r.Fixed {
		for _, e := range f.Errors {
			errs = append(errs, fmt.Sprintf("%s %s %d/s: %s", f.Target, f.Body, f.Rate, e))
		}
	}
	for _, s := range r.Streaming {
		for _, e := range s.Errors {
			errs = append(errs, fmt.Sprintf("%s streaming (%s): %s", s.Target, s.Mode, e))
		}
	}
	for _, o := range r.OpenStreams {
		for _, e := range o.Errors {
			errs = append(errs, fmt.Sprintf("%s open streams: %s", o.Target, e))
		}
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		w("## Errors seen (first of each kind)\n\n")
		for _, e := range errs {
			w("- %s\n", e)
		}
		w("\n")
	}
	w("![latency against rate](latency.png)\n")
	return sb.String()
}
