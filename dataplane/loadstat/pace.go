package loadstat

import (
	"sync"
	"sync/atomic"
	"time"
)

// Pace is how fast a route's server works, learned from its timing totals (Timing): the
// time its prefill takes per prompt token its prefix cache did not hold, and the time a
// request holds a slot (its running phase: prefill and decode). Zero fields are not
// learned yet.
type Pace struct {
	PrefillPerToken, Turn time.Duration
}

// Pace returns the route's pace as learned so far.
func (r *Route) Pace() Pace {
	return Pace{PrefillPerToken: time.Duration(r.pace.prefill.Load()), Turn: time.Duration(r.pace.turn.Load())}
}

// paceRequests is how many finished requests a sample of the pace spans: the totals move
// in steps of one request (a histogram is observed when a request ends), so a window of
// one read (50 ms) would mostly see none or one.
const paceRequests = 8

// pace learns a route's Pace from successive timing totals: each time paceRequests more
// requests finished since the last sample, the totals' differences give one sample of
// each moving average. Totals that went back (the server restarted) start again.
type pace struct {
	mu            sync.Mutex // guards base (reads of one route may overlap in tests)
	base          Timing
	prefill, turn atomic.Int64 // ns per uncached token, ns per request; 0: not learned
}

func (p *pace) observe(t Timing) {
	if t.Finished <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.base
	switch {
	case b.Finished == 0 || t.Finished < b.Finished || t.PrefillSeconds < b.PrefillSeconds ||
		t.InferenceSeconds < b.InferenceSeconds || t.QueriedTokens < b.QueriedTokens || t.CachedTokens < b.CachedTokens:
		p.base = t
		return
	case t.Finished-b.Finished < paceRequests:
		return
	}
	p.base = t
	n := t.Finished - b.Finished
	ewma(&p.turn, int64((t.InferenceSeconds-b.InferenceSeconds)*1e9)/n)
	if computed := (t.QueriedTokens - t.CachedTokens) - (b.QueriedTokens - b.CachedTokens); computed > 0 {
		ewma(&p.prefill, int64((t.PrefillSeconds-b.PrefillSeconds)*1e9)/computed)
	}
}
