package internalapi

import (
	"net/url"
	"sort"
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
func FormatBreakers(states map[string]string) string { return formatRouteStates(states, breakerState) }

// ParseBreakers reads a HeaderBreakers value: the routes whose breaker is not closed.
// ok is false for a value that is too long, not a query string, names a route twice or
// an unknown state.
func ParseBreakers(s string) (map[string]string, bool) { return parseRouteStates(s, breakerState) }

func breakerState(st string) bool { return st == BreakerOpen || st == BreakerHalfOpen }

// formatRouteStates writes route ID to value pairs as a query string, sorted by route ID:
// valid route IDs with a known value only, at most MaxBreakers of them, and within
// MaxBreakersBytes (the last routes dropped when very long IDs would exceed it).
func formatRouteStates(states map[string]string, known func(string) bool) string {
	ids := make([]string, 0, len(states))
	for r, st := range states {
		if known(st) && validRouteID(r) {
			ids = append(ids, r)
		}
	}
	sort.Strings(ids)
	if len(ids) > MaxBreakers {
		ids = ids[:MaxBreakers]
	}
	for {
		v := url.Values{}
		for _, r := range ids {
			v.Set(r, states[r])
		}
		if s := v.Encode(); len(s) <= MaxBreakersBytes || len(ids) == 0 {
			return s
		}
		ids = ids[:len(ids)-1]
	}
}

// parseRouteStates reads formatRouteStates' form; ok is false for a value that is too long,
// not a query string, names a route twice, or has an unknown value.
func parseRouteStates(s string, known func(string) bool) (map[string]string, bool) {
	if len(s) > MaxBreakersBytes {
		return nil, false
	}
	v, err := url.ParseQuery(s)
	if err != nil || len(v) > MaxBreakers {
		return nil, false
	}
	out := make(map[string]string, len(v))
	for r, sts := range v {
		if !validRouteID(r) || len(sts) != 1 || !known(sts[0]) {
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
