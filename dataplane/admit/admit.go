// Package admit is the request's first stage: who is calling (Authenticate: the key, its
// account, the node's residency, the balance) and whether the request may take a slot now
// (Admit: the key's and account's limits, the fair queue over the model's servers, the
// price hold). Admit hands on a Ticket that the request holds until it is recorded.
package admit

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/fairq"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/limits"
	"github.com/sekgate/gateway/dataplane/outcome"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/dataplane/telemetry"
	"github.com/sekgate/gateway/dataplane/tokens"
	"github.com/sekgate/gateway/shared/apierror"
)

// Balances is the node's view of account balances (dataplane/meter).
type Balances interface {
	Spendable(accountID string) int64
}

// Holder holds part of a balance for a request in flight (dataplane/meter).
type Holder interface {
	Hold(accountID string, amount int64) bool
	Release(accountID string, amount int64)
}

// Config is what admission reads.
type Config struct {
	Store    *index.Store
	Balances Balances
	Holder   Holder // nil: no price holds
	Limiter  *limits.Limiter
	// FairQueue, when set, holds requests while every eligible route is saturated;
	// Selector says how much room the routes have.
	FairQueue *fairq.Queue
	Selector  *routing.Selector
	Telemetry *telemetry.Metrics
	// TestBoxToken admits the console's test box on its private listener (TestBoxConn).
	TestBoxToken string
	// Country and RegionURLs: the node's country, whose residency it admits, and where
	// each policy is served instead.
	Country    string
	RegionURLs map[string]string
	Now        func() time.Time
}

// Admitter authenticates and admits requests.
type Admitter struct {
	cfg       Config
	residency nodeAdmission
}

// New builds an Admitter; cfg's fields are required but FairQueue, Holder, TestBoxToken,
// Country and RegionURLs.
func New(cfg Config) *Admitter {
	return &Admitter{cfg: cfg, residency: newNodeAdmission(cfg.Country, cfg.RegionURLs)}
}

// Residency is the 403 for an account whose residency policy this node's country does not
// admit (nil: admitted).
func (s *Admitter) Residency(p Principal) *apierror.Error {
	return s.residency.check(p.Acct.Residency, p.Idx)
}

// Request is what Admit needs of a planned request.
type Request struct {
	P     Principal
	Model *index.Model
	// Endpoint is the endpoint called; Cands the routes that may serve it; Bounds its
	// most usage.
	Endpoint index.Endpoint
	Cands    []index.Candidate
	Bounds   tokens.Bounds
}

// Ticket is an admitted request's place: its limits' slot, its share in the fair queue and
// its price hold. Release gives back the slot when the request stops using a server;
// Settled gives back the hold once its record is priced.
type Ticket struct {
	limits limits.Ticket
	flow   *fairq.Flow
	holder Holder
	acct   string
	held   int64
	// Queued is how long the fair queue held the request; Heavy whether its account had
	// its share of the servers in flight before it (routing.Request.Heavy), and Turns
	// whether it takes this node's turns of the servers' spare slots (routing.Request.Turns).
	Queued       time.Duration
	Heavy, Turns bool
}

// Release gives back the request's limits slot and fair-queue share.
func (t *Ticket) Release() {
	t.limits.Release()
	if t.flow != nil {
		t.flow.Done()
		t.flow = nil
	}
}

// Settled releases the price hold; call it once the record's price counts.
func (t *Ticket) Settled() {
	if t.held > 0 {
		t.holder.Release(t.acct, t.held)
		t.held = 0
	}
}

// Admit applies the key's and account's limits (setting the rate headers on ctx's
// answer), waits in the fair queue while every route is saturated, and holds the
// request's maximum price. A refusal is the client's answer, with nothing held.
func (s *Admitter) Admit(ctx *fasthttp.RequestCtx, r *Request) (Ticket, *apierror.Error) {
	p := r.P
	t, d := s.cfg.Limiter.Acquire(p.Key.ID, p.Key.Limits, p.Acct.ID, p.Acct.Limits, &p.Idx.Snapshot.DefaultLimits)
	if d.Reason != limits.OK {
		s.refusedLimit(d)
		if d.Reason == limits.Rate {
			setRateHeaders(&ctx.Response.Header, d.View)
		}
		return Ticket{}, limitError(d)
	}
	if v, ok := t.RateView(s.cfg.Now()); ok {
		setRateHeaders(&ctx.Response.Header, v)
	}
	tk := Ticket{limits: t, holder: s.cfg.Holder, acct: p.Acct.ID}
	queued, flow, sh, aerr := s.fairQueue(ctx, r)
	if aerr != nil {
		tk.Release()
		return Ticket{}, aerr
	}
	tk.flow, tk.Queued, tk.Heavy, tk.Turns = flow, queued, sh.heavy, sh.turns
	held, aerr := s.holdMaxPrice(r)
	if aerr != nil {
		tk.Release()
		return Ticket{}, aerr
	}
	tk.held = held
	return tk, nil
}

// limitError maps a limiter refusal to the 429 the client gets.
func limitError(d limits.Denial) *apierror.Error {
	ra := limits.RetryAfterSeconds(d.RetryAfter)
	who := "API key"
	if d.Scope == limits.ScopeAccount {
		who = "account"
	}
	if d.Reason == limits.Concurrency {
		return apierror.New(429, apierror.TypeRateLimit, apierror.CodeConcurrencyLimited,
			"too many concurrent requests for this "+who+"; retry when one finishes").WithRetryAfter(ra)
	}
	return apierror.New(429, apierror.TypeRateLimit, apierror.CodeRateLimited,
		"request rate limit of this "+who+" exceeded; retry after the indicated delay").WithRetryAfter(ra)
}

// start is how a request starts after the fair queue: whether its account had its share
// of the servers before it (fairq.Queue.Heavy), and whether, let go from the queue, it took
// this node's turns of their spare slots (fairq.Grant).
type start struct{ heavy, turns bool }

// fairQueue takes the request's turn in the fair queue: at once when a route has room
// within the account's share, else after waiting its turn. It returns how long the request
// waited, its flow (nil without a fair queue) and how it starts, or the refusal: 429 when
// the queue is full or the wait too long.
func (s *Admitter) fairQueue(ctx *fasthttp.RequestCtx, r *Request) (time.Duration, *fairq.Flow, start, *apierror.Error) {
	fq := s.cfg.FairQueue
	if fq == nil {
		return 0, nil, start{}, nil
	}
	acct := r.P.Acct
	f := fq.Flow(acct.ID, acct.Weight())
	if fq.Admit(f, s.space(r.Cands)) {
		st := start{heavy: fq.Heavy(f)}
		f.Start()
		return 0, f, st, nil
	}
	class := "standard"
	if acct.Limits != nil {
		class = "limited"
	}
	chk := &roomCheck{s: s, cands: r.Cands}
	g, err := fq.Wait(ctx, f, class, chk.room)
	if err != nil {
		if err == fairq.ErrFull || err == fairq.ErrTimeout {
			return g.Waited, nil, start{}, ErrSaturated.WithRetryAfter(limits.RetryAfterSeconds(fq.RetryAfter()))
		}
		return g.Waited, nil, start{}, outcome.ErrNoRoute
	}
	st := start{heavy: fq.Heavy(f), turns: g.Turns}
	f.Start()
	return g.Waited, f, st, nil
}

// roomCheck is the fair queue's view of a waiting request's routes.
type roomCheck struct {
	s     *Admitter
	cands []index.Candidate
}

func (r *roomCheck) room() fairq.Space { return r.s.space(r.cands) }

// space is what the servers of cands can take now.
func (s *Admitter) space(cands []index.Candidate) fairq.Space {
	return s.cfg.Selector.Room(cands, s.cfg.Now().UnixNano())
}

// refusedLimit counts a limiter refusal.
func (s *Admitter) refusedLimit(d limits.Denial) {
	if d.Reason == limits.Concurrency {
		s.cfg.Telemetry.Refused(telemetry.RefuseConcurrency)
		return
	}
	s.cfg.Telemetry.Refused(telemetry.RefuseRate)
}
