// Package bench is the `make bench` driver: it starts the simulator, the control plane with
// a throwaway Postgres, a bare fasthttp proxy and a data plane, then drives the same load at
// three targets in one run (the simulator directly, the bare proxy, the data plane) and
// writes tables, a JSON file, a markdown summary and a latency plot.
//
// Load comes from vegeta's library (constant-rate attacks, every latency kept for exact
// percentiles) and, for streams, from a small client that timestamps each server-sent event.
// CPU and memory of the measured processes are read from /proc.
package benchrun

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Config configures a run.
type Config struct {
	// Short selects the quick mode (under two minutes); otherwise the full mode runs.
	Short bool
	// Smoke runs every scenario at a token load for a few seconds: a check of the machinery,
	// not a measurement. It wins over Short.
	Smoke bool
	// BinDir holds the binaries (simulator, controlplane, dataplane, bareproxy). Required.
	BinDir string
	// OutDir receives bench.json, summary.md, latency.png and the processes' logs. Required.
	OutDir string
	// OpenStreams is the open-streams scenario's stream count (default 10,000 full, 1,000
	// short); it is lowered when the file-descriptor limit cannot hold it.
	OpenStreams int
	// Only, when not empty, names the scenarios to run (ScenarioOpen, ScenarioFixed,
	// ScenarioMax, ScenarioStream).
	Only []string
	// Rates and StepDur, when set, replace the mode's fixed rates and step duration.
	Rates   []int
	StepDur time.Duration
	// Bodies, when set, replaces the mode's request body sizes ("1KiB", "64KiB").
	Bodies []string
	// Progress receives progress lines (default os.Stderr).
	Progress io.Writer
	// NoVariants leaves out the data plane's variants (access log off, tracing on, alone
	// keeping its usage in its spool) that the fixed-rate scenario otherwise drives beside
	// the default.
	NoVariants bool
}

// plan is the load each mode drives.
type plan struct {
	fixedDur   time.Duration
	rates      []int
	bodies     []string
	searchBody []string
	ladder     []int
	searchDur  time.Duration
	streamRate int
	streamDur  time.Duration
	streamConc int
	pacingN    int
	streams    int
	ramp       int
	drainWait  time.Duration
}

var sizes = map[string]int{"1KiB": 1 << 10, "64KiB": 64 << 10}

func planFor(short, smoke bool) plan {
	if smoke {
		return plan{fixedDur: 300 * time.Millisecond, rates: []int{200}, bodies: []string{"1KiB", "64KiB"},
			searchBody: []string{"1KiB"}, ladder: []int{400}, searchDur: 300 * time.Millisecond,
			streamRate: 20, streamDur: 500 * time.Millisecond, streamConc: 4, pacingN: 4, streams: 50, ramp: 500, drainWait: 2 * time.Second}
	}
	if short {
		return plan{fixedDur: time.Second, rates: []int{500, 2000, 5000}, bodies: []string{"1KiB", "64KiB"},
			searchBody: []string{"1KiB"}, ladder: []int{8000, 12000}, searchDur: time.Second,
			streamRate: 100, streamDur: 1500 * time.Millisecond, streamConc: 16, pacingN: 8, streams: 1000, ramp: 1000, drainWait: 3 * time.Second}
	}
	return plan{fixedDur: 5 * time.Second, rates: []int{500, 2000, 5000}, bodies: []string{"1KiB", "64KiB"},
		searchBody: []string{"1KiB", "64KiB"}, ladder: []int{6000, 8000, 10000, 12000, 15000, 20000}, searchDur: 3 * time.Second,
		streamRate: 300, streamDur: 5 * time.Second, streamConc: 32, pacingN: 32, streams: 10000, ramp: 2000, drainWait: 12 * time.Second}
}

// Run brings the stack up, runs every scenario and writes the outputs. The report is
// returned even when a scenario failed part-way, with what was measured.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Progress == nil {
		cfg.Progress = os.Stderr
	}
	if cfg.BinDir == "" || cfg.OutDir == "" {
		return nil, fmt.Errorf("bench: BinDir and OutDir are required")
	}
	p := planFor(cfg.Short, cfg.Smoke)
	if cfg.OpenStreams > 0 {
		p.streams = cfg.OpenStreams
	}
	if len(cfg.Rates) > 0 {
		p.rates = cfg.Rates
	}
	if cfg.StepDur > 0 {
		p.fixedDur, p.searchDur = cfg.StepDur, cfg.StepDur
	}
	for _, b := range cfg.Bodies {
		if sizes[b] == 0 {
			return nil, fmt.Errorf("bench: unknown body size %q (1KiB or 64KiB)", b)
		}
	}
	if len(cfg.Bodies) > 0 {
		p.bodies, p.searchBody = cfg.Bodies, cfg.Bodies
	}
	for _, o := range cfg.Only {
		switch o {
		case ScenarioOpen, ScenarioFixed, ScenarioMax, ScenarioStream:
		default:
			return nil, fmt.Errorf("bench: unknown scenario %q", o)
		}
	}
	began := time.Now()
	progress := func(format string, args ...any) {
		fmt.Fprintf(cfg.Progress, "[%5.1fs] %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
	}
	mode := map[bool]string{true: "short", false: "full"}[cfg.Short]
	if cfg.Smoke {
		mode = "smoke"
	}
	rep := &Report{Mode: mode, Started: began.UTC(), Machine: machine()}
	// A proxy holds two descriptors per open stream (client and upstream) plus a few dozen
	// of its own (listener, spool, control-plane connections, idle pool).
	const fdMargin = 200
	if lim, note := raiseFileLimit(2*p.streams + 4096); lim < 2*p.streams+fdMargin {
		p.streams = max(100, (lim-fdMargin)/2)
		rep.Notes = append(rep.Notes, note+fmt.Sprintf(" (raising the hard limit needs CAP_SYS_RESOURCE); a proxy needs two descriptors per open stream, so open streams were lowered to %d", p.streams))
	}

	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "gateway-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	if os.Geteuid() == 0 { // Postgres runs as the postgres user and needs to reach nothing here, but logs move later.
		_ = os.Chmod(work, 0o755)
	}
	progress("starting the stack (%s mode)", rep.Mode)
	variants := !cfg.NoVariants && (len(cfg.Only) == 0 || slices.Contains(cfg.Only, ScenarioFixed))
	st, err := Start(ctx, StackConfig{BinDir: cfg.BinDir, WorkDir: work, Progress: cfg.Progress, Variants: variants})
	if err != nil {
		return nil, err
	}
	defer func() {
		st.Close()
		copyLogs(filepath.Join(work, "logs"), filepath.Join(cfg.OutDir, "logs"))
	}()
	auth := "Bearer " + st.Key
	targets := []*Target{
		{Name: Direct, URL: st.Sim.URL(), PID: st.Sim.PID(), SimPID: st.Sim.PID(), Auth: auth},
		{Name: Bare, URL: st.Bare.URL(), PID: st.Bare.PID(), SimPID: st.Sim.PID(), Auth: auth},
		{Name: Dataplane, URL: st.DP.URL(), PID: st.DP.PID(), SimPID: st.Sim.PID(), Auth: auth},
	}
	rep.Processes = map[string]int{"loadgen": os.Getpid(), "simulator": st.Sim.PID(), "bareproxy": st.Bare.PID(),
		"dataplane": st.DP.PID(), "controlplane": st.CP.PID()}
	if st.PostgresPID > 0 {
		rep.Processes["postgres"] = st.PostgresPID
	}
	for _, t := range targets {
		t.Machine = rep.Processes
	}
	if variants {
		for _, v := range []struct {
			name string
			p    *Proc
		}{{DataplaneQuiet, st.DPQuiet}, {DataplaneTraced, st.DPTraced}, {DataplaneAlone, st.DPAlone}} {
			targets = append(targets, &Target{Name: v.name, URL: v.p.URL(), PID: v.p.PID(), SimPID: st.Sim.PID(), Auth: auth,
				Machine: rep.Processes, fixedOnly: true})
		}
	}
	only := map[string]bool{}
	for _, o := range cfg.Only {
		only[o] = true
	}
	err = scenarios(ctx, st, targets, p, only, rep, progress)
	rep.Elapsed = time.Since(began).Seconds()
	rep.evaluate()
	if werr := rep.Write(cfg.OutDir); werr != nil && err == nil {
		err = werr
	}
	progress("wrote %s", strings.Join([]string{"bench.json", "summary.md", "latency.png"}, ", "))
	return rep, err
}

// Scenario names, for Config.Only.
const (
	ScenarioOpen   = "open"   // concurrent open streams, memory per stream
	ScenarioFixed  = "fixed"  // non-streaming chat at fixed rates
	ScenarioMax    = "max"    // highest sustained rate
	ScenarioStream = "stream" // streaming: time to first byte, events per second, flush per event
)

func scenarios(ctx context.Context, st *Stack, targets []*Target, p plan, only map[string]bool, rep *Report, progress func(string, ...any)) error {
	run := func(name string) bool { return len(only) == 0 || only[name] }
	alive := func() error {
		if err := st.Alive(); err != nil {
			return err
		}
		return ctx.Err()
	}
	progress("warming up each target (500 req/s, 0.5 s)")
	for _, t := range targets {
		if _, err := attack(ctx, t, "1KiB", ChatBody(1<<10), 500, 500*time.Millisecond); err != nil {
			return err
		}
	}
	// Idle cost: CPU each process uses with no load at all (timers, polls, batch loops).
	cw := watchCPU(targets[0].Machine)
	pause(ctx, 2*time.Second)
	idle, busy := cw.stop()
	rep.IdleCPU = map[string]float64{}
	for n, v := range idle {
		rep.IdleCPU[n] = v / 2
	}
	rep.IdleMachineBusyPct = busy
	if busy > 10 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("with the benchmark's processes idle the machine was %.0f%% busy: other work shared the cores during this run, so its figures carry that noise", busy))
	}
	progress("idle for 2 s: machine %.0f%% busy; CPU s/s %s", busy, fmtCPUMap(rep.IdleCPU))
	all := targets
	targets = slices.DeleteFunc(slices.Clone(targets), func(t *Target) bool { return t.fixedOnly }) // the variants run at fixed rates only
	// Open streams first, while the proxies' heaps hold nothing from earlier load: the RSS
	// growth per stream is then not hidden by memory freed by earlier scenarios.
	if run(ScenarioOpen) {
		if err := runOpen(ctx, st, targets, p, rep, alive, progress); err != nil {
			return err
		}
	}
	if run(ScenarioFixed) {
		if err := runFixed(ctx, all, p, rep, alive, progress); err != nil {
			return err
		}
	}
	if run(ScenarioMax) {
		if err := runMax(ctx, targets, p, rep, alive, progress); err != nil {
			return err
		}
	}
	if run(ScenarioStream) {
		if err := runStreaming(ctx, targets, p, rep, alive, progress); err != nil {
			return err
		}
	}
	return alive()
}

func runFixed(ctx context.Context, targets []*Target, p plan, rep *Report, alive func() error, progress func(string, ...any)) error {
	progress("non-streaming chat at fixed rates %v, bodies %v, %v per step", p.rates, p.bodies, p.fixedDur)
	for _, b := range p.bodies {
		body := ChatBody(sizes[b])
		for _, rate := range p.rates {
			for _, t := range targets {
				if err := alive(); err != nil {
					return err
				}
				if t.fixedOnly && b != "1KiB" {
					continue // the variants are compared on 1 KiB only
				}
				r, err := attack(ctx, t, b, body, rate, p.fixedDur)
				if err != nil {
					return err
				}
				progress("  %s", fmtFixed(r))
				rep.Fixed = append(rep.Fixed, r)
				pause(ctx, 300*time.Millisecond)
			}
		}
	}
	compare(rep.Fixed)
	return nil
}

func runMax(ctx context.Context, targets []*Target, p plan, rep *Report, alive func() error, progress func(string, ...any)) error {
	progress("highest rate with < 1%% errors (ladder %v, %v per step)", p.ladder, p.searchDur)
	for _, b := range p.searchBody {
		body := ChatBody(sizes[b])
		for _, t := range targets {
			if err := alive(); err != nil {
				return err
			}
			// Start above the highest fixed rate this target sustained, below the lowest it
			// did not.
			floor, ceil := rep.fixedBounds(t.Name, b)
			m, err := searchMax(ctx, t, b, body, floor, ceil, p.ladder, p.searchDur,
				func(r FixedResult) { progress("  %s", fmtFixed(r)) })
			if err != nil {
				return err
			}
			progress("  %s %s: highest sustained rate %d/s", t.Name, b, m.Sustained)
			rep.MaxRates = append(rep.MaxRates, m)
			pause(ctx, time.Second)
		}
	}
	return nil
}

func runStreaming(ctx context.Context, targets []*Target, p plan, rep *Report, alive func() error, progress func(string, ...any)) error {
	progress("streaming chat (open loop %d streams/s and closed loop %d clients, %v each; 32 and 256 tokens)",
		p.streamRate, p.streamConc, p.streamDur)
	for _, spec := range []streamSpec{{Rate: p.streamRate, Tokens: 32, Dur: p.streamDur}, {Conc: p.streamConc, Tokens: 256, Dur: p.streamDur}} {
		var rs []StreamResult
		for _, t := range targets {
			if err := alive(); err != nil {
				return err
			}
			r, err := runStreams(ctx, t, spec)
			if err != nil {
				return err
			}
			progress("  %-9s %-11s: %d streams (%d failed), ttfb p50 %.3f p99 %.3f ms, %.0f events/s, cpu %.3f s/1k streams",
				r.Target, r.Mode, r.Streams, r.Failed, r.FirstP50, r.FirstP99, r.EventsPerSec, r.CPUPer1k)
			rs = append(rs, r)
			pause(ctx, 300*time.Millisecond)
		}
		compareStreams(rs)
		rep.Streaming = append(rep.Streaming, rs...)
	}
	progress("flush per event (%d streams, 12 tokens paced 20 ms apart)", p.pacingN)
	for _, t := range targets {
		r := checkPacing(ctx, t, p.pacingN, 12, 20*time.Millisecond)
		progress("  %-9s: %d paced gaps, %d batched (< 5 ms), gap p1 %.2f ms p50 %.2f ms, %d failed",
			r.Target, r.Gaps, r.Batched, r.GapP01, r.GapP50, r.Failed)
		rep.Pacing = append(rep.Pacing, r)
	}
	return nil
}

func runOpen(ctx context.Context, st *Stack, targets []*Target, p plan, rep *Report, alive func() error, progress func(string, ...any)) error {
	progress("%d concurrent open streams (one token per second each)", p.streams)
	// The data plane first: a proxy that keeps upstream streams open after its clients left
	// must not weigh on the data plane's figures.
	for _, t := range []*Target{targets[2], targets[1]} {
		if err := alive(); err != nil {
			return err
		}
		r, err := openStreams(ctx, t, st.Sim.URL(), p.streams, p.ramp, p.drainWait, func(s string) { progress("  %s", s) })
		rep.OpenStreams = append(rep.OpenStreams, r)
		if err != nil {
			return fmt.Errorf("open streams via %s: %w", t.Name, err)
		}
		progress("  %-9s: %.1f KiB per open stream, RSS %.0f MiB with %d open, projected %.0f MiB at 10,000; %d upstream streams open 1 s after close, all closed after %.1f s",
			r.Target, r.PerStreamKiB, r.OpenMiB, r.Opened, r.At10kMiB, r.LeftOpen, r.DrainSecs)
		pause(ctx, time.Second)
	}
	return nil
}

func compareStreams(rs []StreamResult) {
	var d, b *StreamResult
	for i := range rs {
		switch rs[i].Target {
		case Direct:
			d = &rs[i]
		case Bare:
			b = &rs[i]
		}
	}
	f := func(v float64) *float64 { return &v }
	for i := range rs {
		r := &rs[i]
		if d != nil && r.Target != Direct {
			r.AddedFirstP50Direct = f(r.FirstP50 - d.FirstP50)
		}
		if b != nil && r.Target == Dataplane {
			r.AddedFirstP50Bare = f(r.FirstP50 - b.FirstP50)
			if b.CPUPer1k > 0 {
				r.CPURatioBare = f(r.CPUPer1k / b.CPUPer1k)
			}
		}
	}
}

// raiseFileLimit raises RLIMIT_NOFILE (inherited by the stack's processes) to want, and
// returns the limit in force with a note when it is lower.
func raiseFileLimit(want int) (int, string) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, "cannot read RLIMIT_NOFILE"
	}
	if lim.Cur >= uint64(want) {
		return int(lim.Cur), ""
	}
	n := lim
	n.Cur = uint64(want)
	if n.Max < n.Cur {
		n.Max = n.Cur // needs root (CAP_SYS_RESOURCE)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &n); err == nil {
		return want, ""
	}
	lim.Cur = lim.Max
	_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	return int(lim.Cur), fmt.Sprintf("RLIMIT_NOFILE could only be raised to %d", lim.Cur)
}

func copyLogs(from, to string) {
	entries, err := os.ReadDir(from)
	if err != nil {
		return
	}
	_ = os.MkdirAll(to, 0o755)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err == nil {
			_ = os.WriteFile(filepath.Join(to, e.Name()), b, 0o644)
		}
	}
}

// Machine describes where the benchmark ran.
type Machine struct {
	CPU    string  `json:"cpu"`
	Cores  int     `json:"cores"`
	MemGiB float64 `json:"mem_gib"`
	Kernel string  `json:"kernel"`
	Go     string  `json:"go"`
}

func machine() Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				if i := strings.IndexByte(l, ':'); i > 0 {
					m.CPU = strings.TrimSpace(l[i+1:])
				}
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			m.MemGiB = float64(kb) / (1 << 20)
		}
	}
	return m
}

func fmtCPUMap(m map[string]float64) string {
	var parts []string
	for _, n := range []string{"loadgen", "simulator", "bareproxy", "dataplane", "controlplane", "postgres"} {
		if v, ok := m[n]; ok {
			parts = append(parts, fmt.Sprintf("%s %.3f", n, v))
		}
	}
	return strings.Join(parts, ", ")
}
