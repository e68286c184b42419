package server

import (
	"time"

	"github.com/sekgate/gateway/dataplane/index"
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
