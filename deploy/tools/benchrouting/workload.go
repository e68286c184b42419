package benchrouting

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Workload is one traffic shape: tenants, their prompts and an open-loop Poisson arrival
// schedule, the same for every policy (same seed).
type Workload struct {
	Name, Title string
	// Tenants is the number of tenants (each an account with its own key).
	Tenants int
	// SystemTokens is the length of each tenant's system prompt (0: none); QuestionTokens
	// the unique part of every request.
	SystemTokens, QuestionTokens int
	// OutputTokens is every request's max_tokens.
	OutputTokens int
	// Rates are the tenants' arrival rates per second.
	Rates []float64
	// SlowFirst gives the first replica one slot instead of four.
	SlowFirst bool
	// Burst, when >= 0, is the tenant that bursts: the others' (the quiet tenants') TTFT
	// p90 and refusals are reported apart.
	Burst int
	// Baseline, when set, is the same workload without the burst (run with the default
	// policy for the quiet tenant's reference).
	Baseline *Workload
	// LimitRPS, when positive, is tenant Limited's account rate limit (requests per
	// second, the deployment's: the nodes share it).
	LimitRPS float64
	Limited  int
	// Policies, when set, are the only policies run (routing names or client names).
	Policies []string
}

// arrival is one request of a schedule.
type arrival struct {
	at     time.Duration
	tenant int
	id     int
}

// schedule draws the arrivals of w over d: one Poisson process per tenant, merged.
func (w *Workload) schedule(d time.Duration, seed uint64) []arrival {
	var all []arrival
	id := 0
	for t, rate := range w.Rates {
		if rate <= 0 {
			continue
		}
		r := rand.New(rand.NewPCG(seed, uint64(t)+1))
		for at := 0.0; ; {
			at += -math.Log(1-r.Float64()) / rate
			if at >= d.Seconds() {
				break
			}
			all = append(all, arrival{at: time.Duration(at * float64(time.Second)), tenant: t})
		}
	}
	sortArrivals(all)
	for i := range all {
		all[i].id = id
		id++
	}
	return all
}

func sortArrivals(a []arrival) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j].at < a[j-1].at; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// words returns n distinct simulator tokens (words) tagged with tag.
func words(tag string, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(tag)
		b.WriteByte('w')
		b.WriteString(strconv.Itoa(i))
	}
	return b.String()
}

// body builds the chat request of arrival a.
func (w *Workload) body(a arrival, model string) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"` + model + `","stream":true,"stream_options":{"include_usage":true},"max_tokens":`)
	b.WriteString(strconv.Itoa(w.OutputTokens))
	b.WriteString(`,"messages":[`)
	if w.SystemTokens > 0 {
		b.WriteString(`{"role":"system","content":"You serve tenant ` + strconv.Itoa(a.tenant) + ". ")
		b.WriteString(words("t"+strconv.Itoa(a.tenant), w.SystemTokens))
		b.WriteString(`"},`)
	}
	b.WriteString(`{"role":"user","content":"`)
	b.WriteString(words("q"+strconv.Itoa(a.id), w.QuestionTokens))
	b.WriteString(`"}]}`)
	return []byte(b.String())
}

// Workloads are the shapes of the benchmark, scaled to replicas of four slots whose
// time to first token is 15 ms plus 0.6 ms per uncached prompt token and whose output
// takes 10 ms per token.
func Workloads() []*Workload {
	even := func(n int, total float64) []float64 {
		r := make([]float64, n)
		for i := range r {
			r[i] = total / float64(n)
		}
		return r
	}
	hot := even(8, 22*0.4*8/7) // the seven others share 40 %
	hot[0] = 22 * 0.6
	quiet := &Workload{Name: "d0", Title: "(d) without the burst", Tenants: 2, SystemTokens: 400, QuestionTokens: 200,
		OutputTokens: 96, Rates: []float64{2, 2}, Burst: 1}
	return []*Workload{
		{Name: "a", Title: "(a) 16 tenants, 1,200-token system prompts, 12 req/s", Tenants: 16, SystemTokens: 1200,
			QuestionTokens: 20, OutputTokens: 32, Rates: even(16, 12), Burst: -1},
		{Name: "b", Title: "(b) unique prompts, one replica with 1 slot, 10 req/s", Tenants: 16, QuestionTokens: 300,
			OutputTokens: 32, Rates: even(16, 10), SlowFirst: true, Burst: -1},
		{Name: "c", Title: "(c) one tenant sends 60 % of 22 req/s", Tenants: 8, SystemTokens: 1200, QuestionTokens: 20,
			OutputTokens: 32, Rates: hot, Burst: -1},
		{Name: "d", Title: "(d) two tenants, one bursting to 10× its share", Tenants: 2, SystemTokens: 400, QuestionTokens: 200,
			OutputTokens: 96, Rates: []float64{2, 20}, Burst: 1, Baseline: quiet},
		burst15(),
		{Name: "f", Title: "(f) an account limited to 10 req/s sending 45 req/s", Tenants: 1, QuestionTokens: 50,
			OutputTokens: 8, Rates: []float64{45}, Burst: -1, LimitRPS: 10, Limited: 0, Policies: []string{"scored"}},
	}
}

// burst15 is four accounts, one sending 15 times each other's rate (more than the four
// replicas serve), run with the default policy, and its baseline without the burst.
func burst15() *Workload {
	w := &Workload{Name: "e", Title: "(e) four accounts, one bursting at 15× the others' rate", Tenants: 4,
		SystemTokens: 400, QuestionTokens: 200, OutputTokens: 96, Rates: []float64{1.2, 1.2, 1.2, 18}, Burst: 3,
		Policies: []string{"scored"}}
	base := *w
	base.Name, base.Title, base.Rates = "e0", "(e) without the burst", []float64{1.2, 1.2, 1.2, 0}
	w.Baseline = &base
	return w
}

// runs reports whether the workload runs policy p.
func (w *Workload) runs(p Policy) bool {
	return len(w.Policies) == 0 || slices.Contains(w.Policies, p.Key())
}
