package snapshot

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
)

// One route validator for both planes: the control plane refuses (admin API, catalogue
// load) and never publishes a route that data-plane nodes would refuse, so one bad route can
// no longer freeze every node on its old snapshot.

// CredentialEnvPrefix is the only environment a route's credentials_ref may read:
// "env:GATEWAY_CREDENTIAL_<NAME>". A route therefore cannot point a node at its own
// secrets (node token, TLS keys) or at anything else in the node's environment.
const CredentialEnvPrefix = "GATEWAY_CREDENTIAL_"

var credentialNameRe = regexp.MustCompile(`^` + CredentialEnvPrefix + `[A-Z0-9_]{1,100}$`)

// FieldError names the route field (JSON name, e.g. "base_url") that is wrong.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// ErrInvalidRoute is wrapped by every *FieldError.
var ErrInvalidRoute = errors.New("snapshot: invalid route")

func (e *FieldError) Unwrap() error { return ErrInvalidRoute }

func fieldErr(field, format string, a ...any) error {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, a...)}
}

// BaseURL is a route's parsed base URL.
type BaseURL struct {
	TLS  bool   // https
	Host string // Host header: host[:port] as written
	Addr string // host:port to dial (default port filled in)
	// PathPrefix is the path without a trailing "/v1" or "/"; an endpoint's upstream path is
	// PathPrefix + endpoint path, so a base URL ending in /v1 never yields /v1/v1.
	PathPrefix string
}

// ParseBaseURL parses scheme://host[:port][/path] with scheme http or https; userinfo,
// query and fragment are refused (credentials travel only through credentials_ref).
func ParseBaseURL(raw string) (BaseURL, error) {
	var b BaseURL
	if raw == "" {
		return b, errors.New("base_url is required")
	}
	if len(raw) > 2048 {
		return b, errors.New("base_url is longer than 2048 bytes")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return b, fmt.Errorf("base_url %q does not parse", raw)
	}
	switch u.Scheme {
	case "http":
	case "https":
		b.TLS = true
	default:
		return b, fmt.Errorf("base_url %q: scheme must be http or https", raw)
	}
	switch {
	case u.Host == "" || u.Hostname() == "":
		return b, fmt.Errorf("base_url %q has no host", raw)
	case u.User != nil:
		return b, fmt.Errorf("base_url %q must not carry userinfo (use credentials_ref)", raw)
	case u.RawQuery != "" || u.ForceQuery:
		return b, fmt.Errorf("base_url %q must not carry a query", raw)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return b, fmt.Errorf("base_url %q must not carry a fragment", raw)
	case u.Opaque != "":
		return b, fmt.Errorf("base_url %q: want scheme://host[:port][/path]", raw)
	}
	b.Host = u.Host
	b.Addr = u.Host
	if u.Port() == "" {
		port := "80"
		if b.TLS {
			port = "443"
		}
		b.Addr = net.JoinHostPort(u.Hostname(), port)
	}
	p := strings.TrimRight(u.EscapedPath(), "/")
	p = strings.TrimSuffix(p, "/v1")
	b.PathPrefix = strings.TrimRight(p, "/")
	return b, nil
}

// ParseCredentialsRef returns the environment variable a credentials_ref names: "" for an
// empty reference, else the NAME of "env:NAME", which must start with CredentialEnvPrefix.
func ParseCredentialsRef(ref string) (string, error) {
	if ref == "" {
		return "", nil
	}
	name, ok := strings.CutPrefix(ref, "env:")
	if !ok {
		return "", fmt.Errorf("credentials_ref %q: want env:%sNAME", ref, CredentialEnvPrefix)
	}
	if !credentialNameRe.MatchString(name) {
		return "", fmt.Errorf("credentials_ref %q: the variable must be named %s followed by 1 to 100 of A-Z, 0-9 and _", ref, CredentialEnvPrefix)
	}
	return name, nil
}

// Validate checks the route fields a node needs to serve it: id, base_url, credentials_ref,
// protocols and the non-negative limits. The error is a *FieldError naming the field.
// (Which model a route belongs to is checked against the snapshot by the caller.)
func (r *Route) Validate() error {
	if r.ID == "" || len(r.ID) > 200 {
		return fieldErr("id", "route id must be 1 to 200 bytes")
	}
	if _, _, replica := SplitReplicaID(r.ID); replica {
		return fieldErr("id", "route id %q ends in @ip:port, the form of a discovered route's replicas", r.ID)
	}
	if _, err := ParseBaseURL(r.BaseURL); err != nil {
		return fieldErr("base_url", "%v", err)
	}
	if _, err := ParseCredentialsRef(r.CredentialsRef); err != nil {
		return fieldErr("credentials_ref", "%v", err)
	}
	if !KnownServer(r.Server) {
		return fieldErr("server", "unknown server %q: want one of %s", r.Server, strings.Join(Servers, ", "))
	}
	if !KnownRouteState(r.State) {
		return fieldErr("state", "unknown state %q: want enabled, disabled or draining", r.State)
	}
	for i, p := range r.Protocols {
		if !KnownEndpoint(p) {
			return fieldErr(fmt.Sprintf("protocols[%d]", i), "unknown endpoint %q", p)
		}
	}
	if err := CheckMetricsURL(r.MetricsURL); err != nil {
		return fieldErr("metrics_url", "%v", err)
	}
	if err := CheckDiscovery(r.Discovery, r.BaseURL); err != nil {
		return fieldErr("discovery", "%v", err)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"max_conns", r.MaxConns}, {"connect_timeout_ms", r.ConnectTimeoutMS}, {"first_byte_timeout_ms", r.FirstByteTimeoutMS},
		{"idle_timeout_ms", r.IdleTimeoutMS}, {"total_timeout_ms", r.TotalTimeoutMS}} {
		if f.v < 0 {
			return fieldErr(f.name, "must not be negative")
		}
	}
	return nil
}

// MetricsOff is the metrics_url that turns reading a route's metrics off.
const MetricsOff = "off"

// CheckMetricsURL checks a route's metrics_url: empty (the default endpoint), "off", or an
// http or https URL without userinfo or fragment.
func CheckMetricsURL(raw string) error {
	if raw == "" || raw == MetricsOff {
		return nil
	}
	if len(raw) > 2048 {
		return errors.New("metrics_url is longer than 2048 bytes")
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("metrics_url %q does not parse", raw)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("metrics_url %q: scheme must be http or https (or the value off)", raw)
	case u.Hostname() == "":
		return fmt.Errorf("metrics_url %q has no host", raw)
	case u.User != nil:
		return fmt.Errorf("metrics_url %q must not carry userinfo", raw)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return fmt.Errorf("metrics_url %q must not carry a fragment", raw)
	}
	return nil
}

// Routing policies of a model (Model.Routing); empty means RoutingScored.
const (
	RoutingScored    = "scored"
	RoutingWeighted  = "weighted"
	RoutingLeastLoad = "least_load"
	RoutingAffinity  = "affinity"
)

// KnownRouting reports whether p is a model's routing policy (or empty: the default).
func KnownRouting(p string) bool {
	switch p {
	case "", RoutingScored, RoutingWeighted, RoutingLeastLoad, RoutingAffinity:
		return true
	}
	return false
}

// Servers are the values of a route's server field (dataplane/dialect has a table for each).
var Servers = []string{"openai", "vllm", "sglang", "llamacpp", "tgi", "ollama"}

// KnownServer reports whether s is a valid server field ("" is openai).
func KnownServer(s string) bool {
	if s == "" {
		return true
	}
	for _, v := range Servers {
		if v == s {
			return true
		}
	}
	return false
}

// Route states (Route.State). The snapshot and the store say RouteEnabled as "".
const (
	RouteEnabled  = "enabled"
	RouteDisabled = "disabled"
	RouteDraining = "draining"
)

// RouteStates are the states an operator may give a route.
var RouteStates = []string{RouteEnabled, RouteDisabled, RouteDraining}

// KnownRouteState reports whether s is a route state ("" is enabled).
func KnownRouteState(s string) bool {
	switch s {
	case "", RouteEnabled, RouteDisabled, RouteDraining:
		return true
	}
	return false
}

// Serving reports whether nodes may send the route new requests.
func (r *Route) Serving() bool { return r.State == "" || r.State == RouteEnabled }

// StateName is the route's state in words: enabled, disabled or draining.
func (r *Route) StateName() string {
	if r.State == "" {
		return RouteEnabled
	}
	return r.State
}
