// Package attempt is the stage that serves a planned, admitted request on its routes: it
// orders the routes (routing.Selector), tries them one by one within the request's time
// and the breakers (routing.Health), and commits to the first answer that can be relayed:
// an Exchange. A request no route served is recorded here, and its outcome.Failure is the
// client's answer.
package attempt

import (
	"log/slog"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/admit"
	"github.com/sekgate/gateway/dataplane/dialect"
	"github.com/sekgate/gateway/dataplane/fairq"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/limits"
	"github.com/sekgate/gateway/dataplane/loadstat"
	"github.com/sekgate/gateway/dataplane/outcome"
	"github.com/sekgate/gateway/dataplane/plan"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/dataplane/settle"
	"github.com/sekgate/gateway/dataplane/telemetry"
	"github.com/sekgate/gateway/shared/usage"
)

// Config is what the attempts use; every field is required but FairQueue, Routed and the
// client watch's.
type Config struct {
	Pool      *proxy.Pool
	Selector  *routing.Selector
	Health    *routing.Health
	FairQueue *fairq.Queue // told when a request leaves its route (nil: none)
	Dialects  *dialect.Memo
	Settler   *settle.Settler
	Telemetry *telemetry.Metrics
	Logger    *slog.Logger
	Now       func() time.Time
	// MaxAttempts bounds the routes one request tries; RequestTimeout its time from
	// routing to its last byte.
	MaxAttempts    int
	RequestTimeout time.Duration
	// ClientWatch watches the client's connection for a disconnect once the request has
	// waited ClientWatchDelay on its upstream.
	ClientWatch      bool
	ClientWatchDelay time.Duration
	// Region is the node's region, recorded in each request's routing.
	Region string
	// Routed, when set, is told of each routed request's record box before its first
	// attempt (the access log and the request's trace).
	Routed func(ctx *fasthttp.RequestCtx, box *settle.Box)
}

// DefaultClientWatchDelay is the usual Config.ClientWatchDelay: a request answered sooner
// never pays for a watch.
const DefaultClientWatchDelay = 20 * time.Millisecond

// Runner runs the attempts of requests.
type Runner struct{ cfg Config }

// New builds a Runner.
func New(cfg Config) *Runner { return &Runner{cfg: cfg} }

// Run tries the eligible routes of c in order (priority, then the model's routing policy;
// routes whose breaker is open are skipped) until one answers, at most MaxAttempts within
// RequestTimeout. A failure before the first byte reaches the client moves on to the next
// route when its outcome says so (outcome.Failure.Retry).
//
// It returns the committed exchange, or the failure of a request no route served, whose
// record it has made (the client is to be answered with f.Client() unless f's class is
// outcome.Cancelled). X-Service-Provider and X-Service-Residency name the route tried
// last (the one that answered on success).
func (r *Runner) Run(ctx *fasthttp.RequestCtx, c *plan.Call, t admit.Ticket, requestID string) (*Exchange, outcome.Failure) {
	ex, order := r.start(ctx, c, t, requestID)
	// Deadlines are the network's (fasthttp compares them with the wall clock); the
	// durations recorded use the injected clock, as the request's own does.
	deadline := time.Now().Add(r.cfg.RequestTimeout)
	var last outcome.Failure
	tried, skipped, unreachable := 0, 0, true // unreachable: every route skipped is known unreachable
	for _, cand := range order {
		if tried >= r.cfg.MaxAttempts || ex.call.Cancelled() {
			break
		}
		if !time.Now().Before(deadline) {
			last = outcome.Of(outcome.Expired)
			break
		}
		var f outcome.Failure
		ex.took = -1
		ld := r.routeLoad(cand.Route)
		err := r.cfg.Health.Do(cand.Route, func() error {
			f = r.try(ctx, ex, c, cand, deadline)
			return f.Breaker()
		})
		ex.countLoad(ld, !f.Failed() && err == nil, c.Stream)
		if err == routing.ErrOpen {
			skipped++
			unreachable = unreachable && r.cfg.Health.Unreachable(cand.Route)
			continue // breaker open: not tried
		}
		if ex.took >= 0 {
			r.attempted(ex, cand, tried > 0)
		}
		tried++
		if !f.Failed() {
			ex.Cand = cand
			ex.Box.Routing.Translated = cand.Translate
			if c.Stream {
				ex.Box.TTFT = r.cfg.Now().Sub(c.Start)
			}
			return ex, f
		}
		last = f
		if !f.Retry() {
			break
		}
	}
	return nil, r.noAnswer(ex, tried, skipped > 0 && unreachable, last)
}

// attempted counts an attempt that called its upstream: its span, its wait, its metrics.
func (r *Runner) attempted(ex *Exchange, cand index.Candidate, retry bool) {
	ex.endAttemptSpan()
	ex.Box.Upstream += ex.took
	r.cfg.Telemetry.Attempt(cand.Route.Provider, attemptOutcome(ex.Box.LastAttempt()), ex.took, retry)
}

// routeLoad counts an attempt onto route rt's load state (nil without a load registry);
// Exchange.countLoad counts it off or hands it to the exchange.
func (r *Runner) routeLoad(rt *index.Route) *loadstat.Route {
	if r.cfg.Selector.Loads == nil {
		return nil
	}
	ld := r.cfg.Selector.Loads.For(rt)
	ld.Start(r.cfg.Now().UnixNano())
	return ld
}

// start takes an exchange for the admitted call: its record started, the client's
// connection watched, and the routes ordered into the failover plan.
func (r *Runner) start(ctx *fasthttp.RequestCtx, c *plan.Call, t admit.Ticket, requestID string) (*Exchange, []index.Candidate) {
	ex := exchangePool.Get().(*Exchange)
	ex.r, ex.Model, ex.start, ex.ticket = r, c.Model, c.Start, t
	queued := t.Queued
	ex.Box = &ex.boxStore
	var keyID *string
	if c.P.Key.ID != "" { // console test-box requests have no key: key_id null
		keyID = &c.P.Key.ID
	}
	ex.Box.Start(settle.Who{RequestID: requestID, At: c.Start, AccountID: c.P.Acct.ID, KeyID: keyID,
		Model: c.Model.ID, Endpoint: c.Endpoint, Stream: c.Stream, Policy: c.P.Acct.Residency, NodeRegion: r.cfg.Region})
	if r.cfg.Routed != nil {
		r.cfg.Routed(ctx, ex.Box) // the record makes the access-log line and ends the span
	}
	ex.Bounds, ex.PromptEstimate, ex.LengthBound = c.Bounds, c.PromptEstimate, c.LengthBound
	if r.cfg.ClientWatch {
		ex.watch.start(ctx.Conn(), &ex.call, r.cfg.ClientWatchDelay)
	}
	now := c.Start
	if queued > 0 {
		now = r.cfg.Now()
	}
	order, dec := r.cfg.Selector.Order(ex.plan[:0], c.Cands, routing.Request{Key: c.Key, HasKey: c.HasKey,
		PrefixBytes: c.PrefixBytes, Mode: routing.ModeOf(c.Model.Routing), Now: now.UnixNano(), Held: queued > 0,
		Heavy: t.Heavy, Turns: t.Turns})
	rt := &ex.Box.Routing
	rt.Balancer, rt.Reason, rt.InFlight, rt.ServerQueue = dec.Mode.String(), dec.Reason, dec.InFlight, max(dec.Waiting, 0)
	rt.QueuedMS = queued.Milliseconds()
	if dec.HasWarm {
		r.warm(c, dec.Warm, requestID)
	}
	return ex, order
}

// noAnswer records a request no route served and returns its failure: cancelled, every
// eligible route's breaker open (known unreachable, or recovering), or the last attempt's.
func (r *Runner) noAnswer(ex *Exchange, tried int, unreachable bool, last outcome.Failure) outcome.Failure {
	switch {
	case ex.call.Cancelled():
		ex.End(outcome.StatusClientClosed, usage.ResultCancelled)
		return outcome.Of(outcome.Cancelled)
	case tried == 0 && !last.Failed() && unreachable:
		// Every eligible route failed to connect until its breaker opened: nothing was
		// forwarded, and nothing will be until the operator brings the servers back.
		last = outcome.Of(outcome.Unreachable)
	case tried == 0 && !last.Failed():
		// Every eligible route is recovering (breaker open): nothing was forwarded.
		last = outcome.Of(outcome.Recovering).WithClient(
			outcome.ErrNoRoute.WithRetryAfter(limits.RetryAfterSeconds(r.cfg.Health.RetryAfter())))
	}
	ex.End(last.Status(), last.Result())
	return last
}
