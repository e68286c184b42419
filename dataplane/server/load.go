package server

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/fairq"
	"github.com/sekgate/gateway/dataplane/outcome"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/limits"
	"github.com/sekgate/gateway/dataplane/loadstat"
)

// routeLoad counts an attempt onto route r's load state (nil without a load registry);
// exchange.countLoad counts it off or hands it to the exchange.
func (s *Server) routeLoad(r *index.Route) *loadstat.Route {
	if s.cfg.Selector.Loads == nil {
		return nil
	}
	ld := s.cfg.Selector.Loads.For(r)
	ld.Start(s.now().UnixNano())
	return ld
}

// countLoad ends an attempt's count on ld, or, when the attempt was committed, keeps it
// until the exchange ends; a stream's time to its first event is a TTFT sample.
func (ex *exchange) countLoad(ld *loadstat.Route, committed, stream bool) {
	if ld == nil {
		return
	}
	if !committed {
		ld.Done()
		return
	}
	ex.load = ld
	if stream && ex.took > 0 {
		ld.ObserveTTFT(ex.took)
	}
}

// endLoad counts the committed request off its route; a complete stream's time per output
// token after the first is a TPOT sample.
func (ex *exchange) endLoad() {
	ld := ex.load
	ex.load = nil
	ld.Done()
	if fq := ex.s.cfg.FairQueue; fq != nil && fq.Busy() {
		fq.Kick() // one out, one in
	}
	rec := &ex.box.Rec
	if ex.stream != nil && ex.box.TTFT > 0 && rec.CompletionTokens > 1 {
		rest := ex.s.now().Sub(ex.start) - ex.box.TTFT
		if rest > 0 {
			ld.ObserveTPOT(rest / time.Duration(rec.CompletionTokens-1))
		}
	}
}

// fairQueue holds a request in the node's fair queue while every eligible route is
// saturated (or others wait already, or its account is above its share and only the
// headroom is free) and reports how long it waited, and the account's flow, whose count
// of requests in flight it has started (the exchange ends it); false when the request
// was refused (answered here with 429 and Retry-After, not recorded: nothing was routed).
func (s *Server) fairQueue(ctx *fasthttp.RequestCtx, c *upstreamCall) (time.Duration, *fairq.Flow, bool) {
	fq := s.cfg.FairQueue
	if fq == nil {
		return 0, nil, true
	}
	f := fq.Flow(c.p.acct.ID, c.p.acct.Weight())
	if free, capacity := s.cfg.Selector.Room(c.cands, s.now().UnixNano()); fq.Admit(f, free, capacity) {
		f.Start()
		return 0, f, true
	}
	class := "standard"
	if c.p.acct.Limits != nil {
		class = "limited"
	}
	// A separate object, not a closure over c: c stays on its caller's stack.
	chk := &roomCheck{s: s, cands: c.cands}
	d, err := fq.Wait(ctx, f, class, chk.room)
	if err != nil {
		if err == fairq.ErrFull || err == fairq.ErrTimeout {
			writeError(ctx, errSaturated.WithRetryAfter(limits.RetryAfterSeconds(fq.RetryAfter())))
		} else {
			writeError(ctx, outcome.ErrNoRoute)
		}
		return d, nil, false
	}
	f.Start()
	return d, f, true
}

// roomCheck tells the fair queue how much room a held request's routes have.
type roomCheck struct {
	s     *Server
	cands []index.Candidate
}

func (r *roomCheck) room() (free, capacity float64) {
	return r.s.cfg.Selector.Room(r.cands, r.s.now().UnixNano())
}
