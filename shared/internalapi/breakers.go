package internalapi

import (
	"net/url"
	"unicode/utf8"
)

// HeaderBreakers carries, on a node's snapshot polls, the routes whose circuit breaker is
// not closed, as a URL query string of route=state (state "open" or "half-open"), e.g.
// "chat-se=open&embed-de=half-open". Present and empty: every breaker is closed; absent:
// the node does not report breakers.
const HeaderBreakers = "X-Node-Breakers"

// MaxBreakers bounds the routes one report names; MaxBreakersBytes the header's length.
const (
	MaxBreakers      = 256
	MaxBreakersBytes = 16 << 10
)

// Breaker states a node reports.
const (
	BreakerOpen     = "open"
	BreakerHalfOpen = "half-open"
)

// FormatBreakers is the HeaderBreakers value for states (route ID to state name): closed
// routes are left out, the rest sorted by route ID, at most MaxBreakers of them.
func FormatBreakers(states map[string]string) string {
	v := url.Values{}
	for r, st := range states {
		if (st == BreakerOpen || st == BreakerHalfOpen) && validRouteID(r) && len(v) < MaxBreakers {
			v.Set(r, st)
		}
	}
	s := v.Encode()
	for len(s) > MaxBreakersBytes { // only with very long route IDs: drop from the end
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		maxKey := keys[0]
		for _, k := range keys {
			if k > maxKey {
				maxKey = k
			}
		}
		v.Del(maxKey)
		s = v.Encode()
	}
	return s
}

// ParseBreakers reads a HeaderBreakers value: the routes whose breaker is not closed.
// ok is false for a value that is too long, not a query string, names a route twice or
// an unknown state.
func ParseBreakers(s string) (map[string]string, bool) {
	if len(s) > MaxBreakersBytes {
		return nil, false
	}
	v, err := url.ParseQuery(s)
	if err != nil || len(v) > MaxBreakers {
		return nil, false
	}
	out := make(map[string]string, len(v))
	for r, sts := range v {
		if !validRouteID(r) || len(sts) != 1 || (sts[0] != BreakerOpen && sts[0] != BreakerHalfOpen) {
			return nil, false
		}
		out[r] = sts[0]
	}
	return out, true
}

// validRouteID: 1 to 200 characters of valid UTF-8 without control characters.
func validRouteID(r string) bool {
	if r == "" || len(r) > 800 || !utf8.ValidString(r) || utf8.RuneCountInString(r) > 200 {
		return false
	}
	for _, c := range r {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}
