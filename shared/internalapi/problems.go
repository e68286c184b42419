package internalapi

import (
	"regexp"
	"sort"
	"strings"
)

// HeaderRouteProblems carries, on a node's snapshot polls, the routes this node cannot use
// because of their configuration, as a URL query string of route=problem, e.g.
// "vllm-se=credential_missing&tgi-de=unreachable". Present and empty: every route is
// usable as far as the node can tell; absent: the node does not report problems.
const HeaderRouteProblems = "X-Node-Route-Problems"

// HeaderCredentials carries, on a node's snapshot polls, the names (never the values) of
// the route credentials the node has (GATEWAY_CREDENTIAL_* variables), comma-separated, so
// that the control plane can warn about a catalogue naming one that nodes lack before it
// is loaded.
const HeaderCredentials = "X-Node-Credentials"

// Route problems a node reports.
const (
	// ProblemCredentialMissing: the route's credentials_ref names a variable the node does
	// not have.
	ProblemCredentialMissing = "credential_missing"
	// ProblemUnreachable: the node cannot connect to the route's server.
	ProblemUnreachable = "unreachable"
	// ProblemTLS: the TLS handshake with the route's server fails (certificate, protocol).
	ProblemTLS = "tls"
	// ProblemUnauthorized: the route's server refuses the node's credential (401 or 403).
	ProblemUnauthorized = "unauthorized"
)

var problems = map[string]bool{ProblemCredentialMissing: true, ProblemUnreachable: true, ProblemTLS: true, ProblemUnauthorized: true}

// FormatRouteProblems is the HeaderRouteProblems value for problems (route ID to problem),
// sorted by route ID, at most MaxBreakers of them; unknown problems are left out.
func FormatRouteProblems(ps map[string]string) string {
	return formatRouteStates(ps, func(p string) bool { return problems[p] })
}

// ParseRouteProblems reads a HeaderRouteProblems value; ok is false for a value that is too
// long, not a query string, names a route twice or an unknown problem.
func ParseRouteProblems(s string) (map[string]string, bool) {
	return parseRouteStates(s, func(p string) bool { return problems[p] })
}

// credentialName is the form of a route credential's variable name.
var credentialName = regexp.MustCompile(`^GATEWAY_CREDENTIAL_[A-Z0-9_]{1,100}$`)

// MaxCredentials bounds the names one HeaderCredentials value lists.
const MaxCredentials = 256

// FormatCredentials is the HeaderCredentials value for names: the valid ones, sorted.
func FormatCredentials(names []string) string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if credentialName.MatchString(n) && len(out) < MaxCredentials {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// ParseCredentials reads a HeaderCredentials value; ok is false when a name is not a
// route credential's variable or there are too many.
func ParseCredentials(s string) ([]string, bool) {
	if s == "" {
		return []string{}, true
	}
	names := strings.Split(s, ",")
	if len(names) > MaxCredentials {
		return nil, false
	}
	for _, n := range names {
		if !credentialName.MatchString(n) {
			return nil, false
		}
	}
	return names, true
}
