package server

import (
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/usage"
)

// failure is what one class of failed upstream exchange (proxy.Fail*) means for a request.
type failure struct {
	retry  bool            // before the first byte reaches the client, the next route is tried
	health error           // what it does to the route's breaker: routing.ErrRouteFailed, ErrUnreachable or ErrNeutral
	result string          // the record's result when no later route succeeds
	client *apierror.Error // the client's answer then
}

// failures is the data plane's one failure table: each failure class once. Answers the
// upstream gave (a non-200 status, an error event) are read by upstreamStatusError and
// reportedOutcome, since they carry the server's own message.
var failures = map[string]failure{
	// Could not connect: the server is down or unreachable from this node. Like a
	// misconfigured route, the client is not invited to retry soon: it is the operator's
	// to fix (the open breaker is reported to the control plane).
	proxy.FailConnect: {retry: true, health: routing.ErrUnreachable, result: usage.ResultUpstreamError, client: errRouteUnreachable},
	// No answer (or no next event) within the route's timeouts.
	proxy.FailTimeout: {retry: true, health: routing.ErrRouteFailed, result: usage.ResultTimeout, client: errProviderTimeout},
	// The connection broke during the exchange.
	proxy.FailTransport: {retry: true, health: routing.ErrRouteFailed, result: usage.ResultUpstreamError, client: errProviderTransport},
	// Every connection to the upstream is busy: this node's limit, not the server's health.
	proxy.FailOverload: {retry: true, health: routing.ErrNeutral, result: usage.ResultNoRoute, client: errNoRoute},
	// The node cannot use the route (a missing credential): the operator's to fix, so the
	// client is not invited to retry (dataplane/routecheck reports it to the operator).
	proxy.FailConfig: {retry: true, health: routing.ErrNeutral, result: usage.ResultNoRoute, client: errRouteMisconfigured},
	// 200 with a body that is not the protocol's answer.
	proxy.FailInvalid: {retry: true, health: routing.ErrRouteFailed, result: usage.ResultUpstreamError, client: errInvalidUpstream},
	// The client went away: nothing to retry or answer; the route is not to blame.
	proxy.FailCancelled: {retry: false, health: routing.ErrNeutral, result: usage.ResultCancelled},
}

// failureOf is class's row; a class the table does not name is a transport failure.
func failureOf(class string) failure {
	if f, ok := failures[class]; ok {
		return f
	}
	return failures[proxy.FailTransport]
}

// outcome is the attempt's outcome for the failure.
func (f failure) outcome() outcome {
	return outcome{retry: f.retry, aerr: f.client, result: f.result, health: f.health}
}
