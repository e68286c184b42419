// Package limits enforces per-key and per-account request-rate and concurrency limits on a
// data-plane node: token buckets (golang.org/x/time/rate) for rates, counters for requests
// in flight. Limits come from the snapshot: an account's own limits or, without them, the
// deployment's Content.DefaultLimits; a key is limited by its own limits when it has some
// and otherwise only through its account (so raising an account's limits takes effect for
// all its keys). A zero field means unlimited.
//
// # Several nodes
//
// Counters live in the node's memory; nothing is shared on the request path. Each entry
// enforces its share (0..1) of the configured limits: rates times the share, bursts and
// concurrency times the share rounded up, never below 1. The share of an entry comes from
// SetShares (the fleet exchange, dataplane/fleetshare: demand-proportional shares the
// control plane computes from every node's reports) or, for entries the shares do not
// list, their Default; before any SetShares the default is 1/Config.ShareNodes (flag
// --limit-share-nodes). Demand tells the fleet exchange what each entry attempted since
// the last call.
//
// Limiter state lives across snapshot swaps and share changes: entries are keyed by key or
// account ID and re-configured in place when their limits or their share change.
package limits

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/sekgate/gateway/shared/snapshot"
)

// Config configures a Limiter.
type Config struct {
	// ShareNodes is the number of data-plane nodes sharing the deployment's limits until
	// SetShares says otherwise; each node then enforces 1/ShareNodes of every limit.
	// Default 1 (each node the full limit).
	ShareNodes int
	// DefaultMaxConcurrent bounds the requests in flight of an account that has no limits of
	// its own when the snapshot's default limits set no concurrency either: one customer's
	// burst then cannot take every upstream slot (default 256, shared by ShareNodes like any
	// limit; negative: no such bound). Connections that presented a valid key are not
	// counted per client address (dataplane/edge), so this is what bounds them.
	DefaultMaxConcurrent int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Reason says why a request was refused.
type Reason uint8

// Reasons of a refusal.
const (
	OK          Reason = iota
	Rate               // request rate exceeded
	Concurrency        // too many requests in flight
)

// Scope says whose limit refused a request.
type Scope uint8

// Scopes of a refusal.
const (
	ScopeKey Scope = iota + 1
	ScopeAccount
)

// Denial describes a refusal: why, whose limit, and when a retry may succeed.
type Denial struct {
	Reason     Reason
	Scope      Scope
	RetryAfter time.Duration
	// View is the refusing bucket's view (rate refusals only).
	View View
}

// Limiter holds the node's limiter entries. Safe for concurrent use.
type Limiter struct {
	cfg      Config
	mu       sync.RWMutex
	keys     map[string]*entry
	accounts map[string]*entry
	shares   atomic.Pointer[Shares] // nil: 1/ShareNodes for every entry
	gen      atomic.Uint64          // bumped by SetShares; entries re-configure when theirs is older
}

// New returns a Limiter.
func New(cfg Config) *Limiter {
	if cfg.ShareNodes <= 0 {
		cfg.ShareNodes = 1
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.DefaultMaxConcurrent == 0 {
		cfg.DefaultMaxConcurrent = DefaultMaxConcurrent
	}
	return &Limiter{cfg: cfg, keys: make(map[string]*entry), accounts: make(map[string]*entry)}
}

// DefaultMaxConcurrent is Config.DefaultMaxConcurrent's default.
const DefaultMaxConcurrent = 256

// Effective returns the limits this node enforces for configured limits c of an entry
// the shares do not list: EffectiveShare at the default share.
func (l *Limiter) Effective(c snapshot.Limits) snapshot.Limits {
	return EffectiveShare(c, l.defaultShare())
}

// EffectiveShare returns the part share (0..1) of configured limits c: the rate times the
// share, burst and concurrency times the share rounded up, never below 1. Rates without a
// burst get a burst of one second's rate (at least 1). Rounding up makes the parts of N
// nodes sum to at most the limit plus N-1.
func EffectiveShare(c snapshot.Limits, share float64) snapshot.Limits {
	var e snapshot.Limits
	if c.RequestsPerSecond > 0 {
		e.RequestsPerSecond = c.RequestsPerSecond * share
		b := c.Burst
		if b <= 0 {
			b = int(math.Ceil(c.RequestsPerSecond))
		}
		e.Burst = ceilShare(b, share)
	}
	if c.MaxConcurrent > 0 {
		e.MaxConcurrent = ceilShare(c.MaxConcurrent, share)
	}
	return e
}

// ceilShare is v times share rounded up (ignoring float error below 1e-9), at least 1.
func ceilShare(v int, share float64) int {
	return max(1, int(math.Ceil(float64(v)*share-1e-9)))
}

// Ticket is an admitted request's hold on concurrency slots; Release it when the request
// ends (the stream included). The zero Ticket holds nothing.
type Ticket struct{ key, account *entry }

// Release frees the ticket's slots. Call it once.
func (t Ticket) Release() {
	if t.key != nil {
		t.key.inflight.Add(-1)
	}
	if t.account != nil {
		t.account.inflight.Add(-1)
	}
}

// Acquire admits one request of key keyID (limits keyLimits, nil: none of its own, only
// the account's apply) of account acctID (acctLimits, nil: defaults). On refusal the
// Denial's Reason is not OK and the ticket holds nothing. The key's limits are checked
// first; a rate token the key spent is not returned when the account then refuses.
func (l *Limiter) Acquire(keyID string, keyLimits *snapshot.Limits, acctID string, acctLimits *snapshot.Limits, defaults *snapshot.Limits) (Ticket, Denial) {
	kl, al := keyLimits, acctLimits
	if al == nil {
		al = defaults
		if l.cfg.DefaultMaxConcurrent > 0 && (al == nil || al.MaxConcurrent <= 0) {
			d := snapshot.Limits{MaxConcurrent: l.cfg.DefaultMaxConcurrent}
			if al != nil {
				d.RequestsPerSecond, d.Burst = al.RequestsPerSecond, al.Burst
			}
			al = &d
		}
	}
	var t Ticket
	if kl != nil && !unlimited(kl) {
		e := l.entry(l.keys, keyID, false)
		if d := e.acquire(l, kl); d.Reason != OK {
			d.Scope = ScopeKey
			return Ticket{}, d
		}
		t.key = e
	}
	if al != nil && !unlimited(al) {
		e := l.entry(l.accounts, acctID, true)
		if d := e.acquire(l, al); d.Reason != OK {
			t.Release()
			d.Scope = ScopeAccount
			return Ticket{}, d
		}
		t.account = e
	}
	return t, Denial{}
}

func unlimited(c *snapshot.Limits) bool { return c.RequestsPerSecond <= 0 && c.MaxConcurrent <= 0 }

func (l *Limiter) entry(m map[string]*entry, id string, account bool) *entry {
	l.mu.RLock()
	e := m[id]
	l.mu.RUnlock()
	if e != nil {
		return e
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if e = m[id]; e == nil {
		e = &entry{id: id, account: account}
		m[id] = e
	}
	return e
}

// Retain drops the state of keys and accounts the snapshot no longer has (revoked or
// removed), so a node's limiter does not grow without bound. A request still holding a
// dropped entry's slot releases it normally.
func (l *Limiter) Retain(s *snapshot.Snapshot) {
	keys := make(map[string]struct{}, len(s.Keys))
	for i := range s.Keys {
		keys[s.Keys[i].ID] = struct{}{}
	}
	accounts := make(map[string]struct{}, len(s.Accounts))
	for i := range s.Accounts {
		accounts[s.Accounts[i].ID] = struct{}{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for id := range l.keys {
		if _, ok := keys[id]; !ok {
			delete(l.keys, id)
		}
	}
	for id := range l.accounts {
		if _, ok := accounts[id]; !ok {
			delete(l.accounts, id)
		}
	}
}

// entry is one key's or account's limiter state.
type entry struct {
	id       string
	account  bool // an account's entry, else a key's
	mu       sync.Mutex
	conf     atomic.Pointer[snapshot.Limits] // configured limits applied (before the share)
	gen      atomic.Uint64                   // the Limiter's shares generation applied
	rl       atomic.Pointer[rate.Limiter]    // nil: no rate limit
	max      atomic.Int64                    // 0: no concurrency limit
	inflight atomic.Int64
	attempts atomic.Int64 // requests checked against the entry since the last Demand
}

// configure applies configured limits c when they, or the limiter's shares, differ from
// the applied ones.
func (e *entry) configure(l *Limiter, c *snapshot.Limits) {
	g := l.gen.Load()
	if cur := e.conf.Load(); cur != nil && *cur == *c && e.gen.Load() == g {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if cur := e.conf.Load(); cur != nil && *cur == *c && e.gen.Load() == g {
		return
	}
	eff := EffectiveShare(*c, l.shareOf(e))
	now := l.cfg.Now()
	switch rl := e.rl.Load(); {
	case eff.RequestsPerSecond <= 0:
		e.rl.Store(nil)
	case rl == nil:
		e.rl.Store(rate.NewLimiter(rate.Limit(eff.RequestsPerSecond), eff.Burst))
	default:
		rl.SetLimitAt(now, rate.Limit(eff.RequestsPerSecond))
		rl.SetBurstAt(now, eff.Burst)
	}
	e.max.Store(int64(eff.MaxConcurrent))
	cp := *c
	e.conf.Store(&cp)
	e.gen.Store(g)
}

func (e *entry) acquire(l *Limiter, c *snapshot.Limits) Denial {
	e.configure(l, c)
	e.attempts.Add(1)
	if m := e.max.Load(); m > 0 {
		if e.inflight.Add(1) > m {
			e.inflight.Add(-1)
			return Denial{Reason: Concurrency, RetryAfter: time.Second}
		}
	} else {
		e.inflight.Add(1)
	}
	if rl := e.rl.Load(); rl != nil {
		now := l.cfg.Now()
		if !rl.AllowN(now, 1) {
			e.inflight.Add(-1)
			wait := time.Second
			if lim := float64(rl.Limit()); lim > 0 {
				need := 1 - rl.TokensAt(now)
				wait = time.Duration(math.Ceil(need / lim * float64(time.Second)))
			}
			return Denial{Reason: Rate, RetryAfter: max(wait, time.Millisecond), View: bucketView(rl, now)}
		}
	}
	return Denial{}
}

// RetryAfterSeconds rounds d up to whole seconds, at least 1 (the Retry-After header).
func RetryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// View is this node's view of the request-rate limit bounding a request, as the
// x-ratelimit-*-requests headers report it: Limit is the bucket's size (the requests the
// node admits at once, its share of the configured burst), Remaining the whole requests
// left in it, Reset the time until it is full again.
type View struct {
	Limit, Remaining int
	Reset            time.Duration
}

// RateView returns the view of the ticket's tightest request-rate limit (the key's or the
// account's, whichever has fewer requests left) at now; false when none applies.
func (t Ticket) RateView(now time.Time) (View, bool) {
	kv, kok := t.key.view(now)
	av, aok := t.account.view(now)
	switch {
	case kok && (!aok || kv.Remaining <= av.Remaining):
		return kv, true
	case aok:
		return av, true
	}
	return View{}, false
}

// view is the entry's rate view; false without a rate limit.
func (e *entry) view(now time.Time) (View, bool) {
	if e == nil {
		return View{}, false
	}
	rl := e.rl.Load()
	if rl == nil {
		return View{}, false
	}
	return bucketView(rl, now), true
}

func bucketView(rl *rate.Limiter, now time.Time) View {
	tokens, burst, lim := rl.TokensAt(now), rl.Burst(), float64(rl.Limit())
	v := View{Limit: burst, Remaining: max(int(math.Floor(tokens)), 0)}
	if missing := float64(burst) - tokens; missing > 0 && lim > 0 {
		v.Reset = time.Duration(math.Ceil(missing / lim * float64(time.Second)))
	}
	return v
}
