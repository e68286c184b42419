package benchrun

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Target is one of the three things the benchmark drives load against.
type Target struct {
	Name string // "direct", "bare", "dataplane"
	URL  string // http://host:port
	// PID is the process whose CPU and memory are reported: the simulator for the direct
	// path, the proxy otherwise.
	PID int
	// SimPID is the simulator's process, whose CPU is reported beside the target's.
	SimPID int
	// Auth is the Authorization header value (the same on every target; only the data
	// plane checks it).
	Auth string
	// Machine names the processes sharing the machine whose CPU is reported per attack
	// (load generator, simulator, control plane, Postgres, proxies).
	Machine map[string]int

	client *http.Client
	// fixedOnly: a variant driven by the fixed-rate scenario only.
	fixedOnly bool
}

// Target names.
const (
	Direct    = "direct"
	Bare      = "bare"
	Dataplane = "dataplane"
	// The data plane's variants (fixed rates only): the default is metrics and the JSON
	// access log; quiet has the access log off, traced adds tracing of every request;
	// alone is the default with its usage batches refused (usagesink.go), so that it keeps
	// its records in its spool: no batch exchange, and the control plane and Postgres idle
	// while it is measured.
	DataplaneQuiet  = "dataplane-quiet"
	DataplaneTraced = "dataplane-traced"
	DataplaneAlone  = "dataplane-alone"
)

func (t *Target) httpClient() *http.Client {
	if t.client == nil {
		t.client = &http.Client{
			Timeout: 5 * time.Second,
			Transport: &http.Transport{
				DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
				MaxIdleConnsPerHost: 4096,
				MaxIdleConns:        4096,
				IdleConnTimeout:     60 * time.Second,
				DisableCompression:  true,
			},
		}
	}
	return t.client
}

// FixedResult is one constant-rate attack on one target.
type FixedResult struct {
	Target string  `json:"target"`
	Body   string  `json:"body"` // "1KiB" or "64KiB"
	Rate   int     `json:"rate"` // requested requests per second
	Secs   float64 `json:"duration_s"`
	// Requests sent, the rate they were sent at, successful answers per second.
	Requests   int     `json:"requests"`
	SentRate   float64 `json:"sent_rate"`
	Throughput float64 `json:"throughput"`
	ErrorPct   float64 `json:"error_pct"`
	// Latency percentiles over all requests, in milliseconds (exact, from every sample).
	P50 float64 `json:"p50_ms"`
	P90 float64 `json:"p90_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
	// CPU seconds per 1,000 requests of the target process (the simulator for direct) and
	// of the simulator; peak RSS of the target process in MiB during this attack.
	CPUPer1k    float64 `json:"cpu_s_per_1k"`
	SysPct      float64 `json:"cpu_sys_pct"` // share of CPUPer1k spent in the kernel
	SimCPUPer1k float64 `json:"sim_cpu_s_per_1k"`
	PeakRSSMiB  float64 `json:"peak_rss_mib"`
	// Where the machine's CPU went: CPU seconds per 1,000 requests of each process (the
	// load generator, simulator, control plane, Postgres and the proxies), and the share of
	// both cores busy during the attack.
	CPUByProcess   map[string]float64 `json:"cpu_s_per_1k_by_process,omitempty"`
	MachineBusyPct float64            `json:"machine_busy_pct"`
	OtherWorkPct   float64            `json:"other_work_pct"` // machine share busy with processes not in the benchmark
	Errors         []string           `json:"errors,omitempty"`
	// Comparisons filled in once all targets ran at this rate (nil when not measurable).
	AddedP50Direct *float64 `json:"added_p50_over_direct_ms,omitempty"`
	AddedP99Direct *float64 `json:"added_p99_over_direct_ms,omitempty"`
	AddedP50Bare   *float64 `json:"added_p50_over_bare_ms,omitempty"`
	AddedP99Bare   *float64 `json:"added_p99_over_bare_ms,omitempty"`
	CPURatioBare   *float64 `json:"cpu_ratio_to_bare,omitempty"`
}

// SustainMaxP99 is the p99 above which a target is taken not to keep up with a rate: its
// queue grows during the attack even if nothing has failed yet.
const SustainMaxP99 = 100.0 // ms

// Sustained reports whether the target kept up with the rate: requests sent at ≥ 95 % of it,
// successful answers at ≥ 95 % of it, under 1 % errors and p99 under SustainMaxP99.
func (r FixedResult) Sustained() bool {
	rate := float64(r.Rate)
	return r.ErrorPct < 1 && r.SentRate >= 0.95*rate && r.Throughput >= 0.95*rate && r.P99 < SustainMaxP99
}

// ChatBody returns a non-streaming chat completion request of exactly size bytes (size ≥
// 128): the user message is padded with words.
func ChatBody(size int) []byte {
	head := `{"model":"` + Model + `","max_tokens":16,"messages":[{"role":"user","content":"`
	tail := `"}]}`
	n := size - len(head) - len(tail)
	var sb strings.Builder
	sb.WriteString(head)
	words := []string{"hej ", "hopp ", "gateway ", "token ", "stream "}
	for i := 0; sb.Len() < len(head)+n; i++ {
		w := words[i%len(words)]
		if rest := len(head) + n - sb.Len(); len(w) > rest {
			w = strings.Repeat("x", rest)
		}
		sb.WriteString(w)
	}
	sb.WriteString(tail)
	return []byte(sb.String())
}

// attack runs one constant-rate attack of dur on t with body, measuring t's process.
func attack(ctx context.Context, t *Target, bodyName string, body []byte, rate int, dur time.Duration) (FixedResult, error) {
	res := FixedResult{Target: t.Name, Body: bodyName, Rate: rate, Secs: dur.Seconds()}
	hdr := http.Header{"Content-Type": {"application/json"}, "Authorization": {t.Auth}}
	tr := vegeta.NewStaticTargeter(vegeta.Target{Method: "POST", URL: t.URL + "/v1/chat/completions", Body: body, Header: hdr})
	atk := vegeta.NewAttacker(vegeta.Client(t.httpClient()), vegeta.Workers(16), vegeta.MaxWorkers(1024),
		vegeta.MaxBody(0), vegeta.Redirects(vegeta.NoFollow))
	stop := context.AfterFunc(ctx, func() { atk.Stop() })
	defer stop()

	tm, err := StartMeter(t.PID)
	if err != nil {
		return res, err
	}
	sm, err := StartMeter(t.SimPID)
	if err != nil {
		return res, err
	}
	cw := watchCPU(t.Machine)
	lat := make([]time.Duration, 0, int(float64(rate)*dur.Seconds())+16)
	var m vegeta.Metrics
	for r := range atk.Attack(tr, vegeta.ConstantPacer{Freq: rate, Per: time.Second}, dur, t.Name) {
		m.Add(r)
		lat = append(lat, r.Latency)
	}
	m.Close()
	// Let trailing work (usage batches) land in this attack's CPU figure.
	time.Sleep(250 * time.Millisecond)
	byProc, busy, others := cw.stopOthers()
	res.OtherWorkPct = others
	tu, err := tm.Stop()
	if err != nil {
		return res, err
	}
	su, err := sm.Stop()
	if err != nil {
		return res, err
	}
	res.MachineBusyPct = busy
	if m.Requests > 0 {
		res.CPUByProcess = map[string]float64{}
		for n, v := range byProc {
			res.CPUByProcess[n] = v / float64(m.Requests) * 1000
		}
	}
	res.Requests = int(m.Requests)
	res.SentRate = m.Rate
	// Successful answers per second of the sending window (vegeta's Throughput also divides
	// by the wait for the last answer, which a single slow answer inflates in short steps).
	if m.Duration > 0 {
		res.Throughput = float64(m.Requests) * m.Success / m.Duration.Seconds()
	}
	res.ErrorPct = 100 * (1 - m.Success)
	q := Quantiles(lat, 0.5, 0.9, 0.99, 1)
	res.P50, res.P90, res.P99, res.Max = q[0], q[1], q[2], q[3]
	if m.Requests > 0 {
		res.CPUPer1k = tu.CPUSeconds / float64(m.Requests) * 1000
		if tu.CPUSeconds > 0 {
			res.SysPct = 100 * tu.SysSeconds / tu.CPUSeconds
		}
		res.SimCPUPer1k = su.CPUSeconds / float64(m.Requests) * 1000
	}
	res.PeakRSSMiB = float64(tu.PeakRSS) / (1 << 20)
	if len(m.Errors) > 0 {
		res.Errors = m.Errors[:min(len(m.Errors), 5)]
	}
	return res, ctx.Err()
}

// Quantiles returns the q-quantiles (0..1) of d in milliseconds, by the nearest-rank rule.
// It sorts d.
func Quantiles(d []time.Duration, qs ...float64) []float64 {
	out := make([]float64, len(qs))
	if len(d) == 0 {
		return out
	}
	slices.Sort(d)
	for i, q := range qs {
		k := int(q*float64(len(d))+0.999999) - 1
		k = max(0, min(k, len(d)-1))
		out[i] = float64(d[k]) / float64(time.Millisecond)
	}
	return out
}

// compare fills each result's comparisons with the direct and bare results of the same body
// and rate.
func compare(rs []FixedResult) {
	type key struct {
		body string
		rate int
	}
	by := map[key]map[string]*FixedResult{}
	for i := range rs {
		k := key{rs[i].Body, rs[i].Rate}
		if by[k] == nil {
			by[k] = map[string]*FixedResult{}
		}
		by[k][rs[i].Target] = &rs[i]
	}
	f := func(v float64) *float64 { return &v }
	for i := range rs {
		r := &rs[i]
		k := key{r.Body, r.Rate}
		if d := by[k][Direct]; d != nil && r.Target != Direct {
			r.AddedP50Direct, r.AddedP99Direct = f(r.P50-d.P50), f(r.P99-d.P99)
		}
		if b := by[k][Bare]; b != nil && strings.HasPrefix(r.Target, Dataplane) {
			r.AddedP50Bare, r.AddedP99Bare = f(r.P50-b.P50), f(r.P99-b.P99)
			if b.CPUPer1k > 0 {
				r.CPURatioBare = f(r.CPUPer1k / b.CPUPer1k)
			}
		}
	}
}

// MaxRate is the outcome of the search for a target's highest sustained rate.
type MaxRate struct {
	Target    string        `json:"target"`
	Body      string        `json:"body"`
	Sustained int           `json:"max_sustained_rate"` // 0: not even the first step held
	Steps     []FixedResult `json:"steps"`
}

// searchMax finds the highest rate t sustains (< 1 % errors, rate held). floor is a rate
// already known to hold and ceil one known to fail (0: none). Without a ceiling it climbs
// ladder from above floor until a step fails; then it tries the midpoint between the last
// good and the first bad rate, twice at most. Every step is bounded by dur.
func searchMax(ctx context.Context, t *Target, bodyName string, body []byte, floor, ceil int, ladder []int, dur time.Duration, progress func(FixedResult)) (MaxRate, error) {
	out := MaxRate{Target: t.Name, Body: bodyName}
	good, bad := floor, ceil
	for _, rate := range ladder {
		if rate <= floor || bad > 0 {
			continue
		}
		r, err := attack(ctx, t, bodyName, body, rate, dur)
		if err != nil {
			return out, err
		}
		progress(r)
		out.Steps = append(out.Steps, r)
		if !r.Sustained() {
			bad = rate
			break
		}
		good = rate
		pause(ctx, 300*time.Millisecond)
	}
	for i := 0; i < 2 && bad > 0 && good > 0 && bad-good > good/10; i++ {
		mid := (good + bad) / 2 / 50 * 50
		if mid <= good || mid >= bad {
			break
		}
		pause(ctx, 500*time.Millisecond)
		r, err := attack(ctx, t, bodyName, body, mid, dur)
		if err != nil {
			return out, err
		}
		progress(r)
		out.Steps = append(out.Steps, r)
		if r.Sustained() {
			good = mid
		} else {
			bad = mid
		}
	}
	sort.Slice(out.Steps, func(i, j int) bool { return out.Steps[i].Rate < out.Steps[j].Rate })
	out.Sustained = good
	return out, nil
}

func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func fmtFixed(r FixedResult) string {
	s := fmt.Sprintf("%-9s %-5s %5d/s: sent %6.0f/s ok %6.0f/s err %5.2f%%  p50 %6.3f p90 %6.3f p99 %7.3f ms  cpu %.3f s/1k (%.0f%% sys)  rss %.0f MiB  machine %3.0f%% busy (others %.0f%%)",
		r.Target, r.Body, r.Rate, r.SentRate, r.Throughput, r.ErrorPct, r.P50, r.P90, r.P99, r.CPUPer1k, r.SysPct, r.PeakRSSMiB, r.MachineBusyPct, r.OtherWorkPct)
	if len(r.Errors) > 0 {
		s += "  first error: " + r.Errors[0]
	}
	return s
}

// RuntimeEnv is the Go runtime's settings every process of a run is started with, the bare
// proxy and the data plane alike, so that their figures compare like for like. They are the
// settings the deployment files give the data plane (deploy/systemd, deploy/kubernetes,
// deploy/images): GODEBUG schedtrace at its largest period keeps the runtime's monitor
// thread ticking instead of being woken by the first system call after every idle moment
// (docs/performance.md).
var RuntimeEnv = []string{"GODEBUG=schedtrace=2147483647"}
