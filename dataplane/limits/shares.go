package limits

import "maps"

// Shares are the parts (0..1) of the configured limits this node enforces: per key and
// per account ID, and Default for every entry they do not list.
type Shares struct {
	Default        float64
	Keys, Accounts map[string]float64
}

// EqualShares are shares of 1/n for every entry (n below 1 counts as 1).
func EqualShares(n int) Shares { return Shares{Default: 1 / float64(max(n, 1))} }

// SetShares replaces the node's shares. Entries are re-configured in place at their next
// request: a rate bucket keeps its tokens up to its new burst, requests in flight keep
// their slots. Shares outside (0, 1] are clamped into it (0 and below: the default).
func (l *Limiter) SetShares(s Shares) {
	cp := Shares{Default: clampShare(s.Default, 1/float64(l.cfg.ShareNodes)),
		Keys: maps.Clone(s.Keys), Accounts: maps.Clone(s.Accounts)}
	for _, m := range []map[string]float64{cp.Keys, cp.Accounts} {
		for id, v := range m {
			m[id] = clampShare(v, cp.Default)
		}
	}
	l.shares.Store(&cp)
	l.gen.Add(1)
}

func clampShare(v, dflt float64) float64 {
	switch {
	case v > 1:
		return 1
	case v > 0:
		return v
	}
	return dflt
}

// defaultShare is the share of entries the shares do not list.
func (l *Limiter) defaultShare() float64 {
	if s := l.shares.Load(); s != nil {
		return s.Default
	}
	return 1 / float64(l.cfg.ShareNodes)
}

// shareOf is entry e's share.
func (l *Limiter) shareOf(e *entry) float64 {
	s := l.shares.Load()
	if s == nil {
		return 1 / float64(l.cfg.ShareNodes)
	}
	m := s.Keys
	if e.account {
		m = s.Accounts
	}
	if v, ok := m[e.id]; ok {
		return v
	}
	return s.Default
}

// Demand is what one key or account asked of this node since the last report: requests
// checked against its limits (admitted and refused) and its requests in flight now.
type Demand struct {
	ID       string
	Attempts int64
	InFlight int64
}

// Demand returns, and restarts the count of, the demand of every limited key and account
// that attempted a request since the last call or has one in flight.
func (l *Limiter) Demand() (keys, accounts []Demand) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return takeDemand(l.keys), takeDemand(l.accounts)
}

func takeDemand(m map[string]*entry) []Demand {
	var out []Demand
	for id, e := range m {
		if c := e.conf.Load(); c == nil || unlimited(c) {
			continue
		}
		n, f := e.attempts.Swap(0), e.inflight.Load()
		if n > 0 || f > 0 {
			out = append(out, Demand{ID: id, Attempts: n, InFlight: f})
		}
	}
	return out
}
