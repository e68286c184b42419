// Package outcome is the one place that says what a failed upstream attempt means: whether
// the next route is tried, what it does to the route's breaker, the record's result and the
// client's answer. Classify turns what an attempt came to (a transport error, a non-200
// status, an error the server reported as its stream's first event) into a Failure; the
// meanings table gives each Class its meaning, and a test fails when a Class lacks one.
package outcome

import (
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/usage"
)

// Class is one kind of failed attempt, or of a request no attempt served.
type Class uint8

// The classes. A new one needs a row in meanings (TestEveryClassHasAMeaning).
const (
	none Class = iota
	// Transport failures (proxy.Classify).
	Connect   // could not connect: the server is down or unreachable from this node
	Timeout   // no answer, or no next event, within the route's timeouts
	Transport // the connection broke during the exchange
	Overload  // every connection to the upstream is busy: this node's limit
	Config    // the node cannot use the route (a missing credential)
	Invalid   // 200 with a body or stream that is not the protocol's answer
	Cancelled // the client went away
	// Answers the server gave: a non-200 status, or an error as its stream's first event.
	Refused     // the server refused the input (400, 413, 422, a context overflow)
	RateLimited // 429: the server is at capacity
	Unavailable // 503
	GatewayTime // 504
	BadGateway  // 502
	ServerError // another 5xx
	ClientError // another 4xx: the server will not serve this request
	Reported    // a server error reported as the stream's first event
	// Failures of the gateway's own before or between attempts.
	BodyRefused // the upstream body could not be built for the route (nothing forwarded)
	Expired     // the request's time ran out before the next attempt
	Recovering  // every eligible route's breaker is open: nothing was forwarded
	Unreachable // every eligible route is known unreachable: nothing was forwarded
	numClasses
)

// meaning is what one class means for a request.
type meaning struct {
	name  string
	retry bool // before the first byte reaches the client, the next route is tried
	// breaker is what the class does to the route's breaker: nil counts a success (the
	// route answered), routing.ErrRouteFailed or ErrUnreachable a failure, ErrNeutral
	// neither.
	breaker error
	result  string          // the record's result when no later route succeeds
	client  *apierror.Error // the client's answer then (an answer carrying the server's message replaces it)
	// attemptError is what the record's attempt says went wrong ("": its status says it).
	attemptError string
}

// meanings is the data plane's one failure table: each class once.
var meanings = [numClasses]meaning{
	// Like a misconfigured route, the client is not invited to retry soon: it is the
	// operator's to fix (the open breaker is reported to the control plane).
	Connect:   {name: "connect", retry: true, breaker: routing.ErrUnreachable, result: usage.ResultUpstreamError, client: ErrRouteUnreachable, attemptError: proxy.FailConnect},
	Timeout:   {name: "timeout", retry: true, breaker: routing.ErrRouteFailed, result: usage.ResultTimeout, client: ErrProviderTimeout, attemptError: proxy.FailTimeout},
	Transport: {name: "transport", retry: true, breaker: routing.ErrRouteFailed, result: usage.ResultUpstreamError, client: ErrProviderTransport, attemptError: proxy.FailTransport},
	// This node's limit, not the server's health.
	Overload: {name: "overload", retry: true, breaker: routing.ErrNeutral, result: usage.ResultNoRoute, client: ErrNoRoute, attemptError: proxy.FailOverload},
	// The operator's to fix, so the client is not invited to retry
	// (dataplane/routecheck reports it to the operator).
	Config:  {name: "config", retry: true, breaker: routing.ErrNeutral, result: usage.ResultNoRoute, client: ErrRouteMisconfigured, attemptError: proxy.FailConfig},
	Invalid: {name: "invalid", retry: true, breaker: routing.ErrRouteFailed, result: usage.ResultUpstreamError, client: ErrInvalidUpstream, attemptError: proxy.FailInvalid},
	// Nothing to retry or answer; the route is not to blame.
	Cancelled: {name: "cancelled", breaker: routing.ErrNeutral, result: usage.ResultCancelled, client: ErrClientClosed, attemptError: proxy.FailCancelled},
	// The client's error, which every route would give: never failed over, and the route
	// is fine.
	Refused: {name: "refused", result: usage.ResultRejected, client: ErrProviderRefused},
	// The server is alive and says when to come back: failed over, not counted against
	// the breaker (an open breaker would turn the client's 429 into a 503).
	RateLimited: {name: "rate_limited", retry: true, breaker: routing.ErrNeutral, result: usage.ResultRateLimited, client: ErrProviderRateLimited},
	Unavailable: {name: "unavailable", retry: true, breaker: routing.ErrRouteFailed, result: usage.ResultUpstreamError, client: ErrProviderUnavailable},
	GatewayTime: {name: "gateway_timeout", retry: true, breaker: routing.ErrRouteFailed, result: usage.ResultTimeout, client: ErrProviderTimeout},
	BadGateway:  {name: "bad_gateway", retry: true, breaker: routing.ErrRouteFailed, result: usage.ResultUpstreamError, client: ErrProviderFailed},
	// A server error other than the gateway statuses is not failed over: another route's
	// server would most likely fail the same request.
	ServerError: {name: "server_error", breaker: routing.ErrRouteFailed, result: usage.ResultUpstreamError, client: ErrProviderFailed},
	ClientError: {name: "client_error", result: usage.ResultUpstreamError, client: ErrProviderFailed},
	// Nothing reached the client yet, so another route may serve it.
	Reported:    {name: "reported", retry: true, breaker: routing.ErrRouteFailed, result: usage.ResultUpstreamError, client: ErrProviderFailed},
	BodyRefused: {name: "body_refused", breaker: routing.ErrNeutral, result: usage.ResultRejected, client: ErrBodyEdit},
	Expired:     {name: "expired", breaker: routing.ErrNeutral, result: usage.ResultTimeout, client: ErrProviderTimeout},
	Recovering:  {name: "recovering", breaker: routing.ErrNeutral, result: usage.ResultNoRoute, client: ErrNoRoute},
	Unreachable: {name: "unreachable", breaker: routing.ErrNeutral, result: usage.ResultNoRoute, client: ErrRouteUnreachable},
}

// Failure is one failed attempt, or a request no attempt served. The zero Failure is
// none: the attempt succeeded.
type Failure struct {
	class Class
	// client, when set, replaces the class's answer: one carrying the server's message or
	// a Retry-After.
	client *apierror.Error
}

// Of is a failure of class c with the class's own answer.
func Of(c Class) Failure { return Failure{class: c} }

// WithClient returns f answering the client with e instead of the class's answer.
func (f Failure) WithClient(e *apierror.Error) Failure { f.client = e; return f }

// Failed reports whether f is a failure (not the zero Failure).
func (f Failure) Failed() bool { return f.class != none }

// Class is f's class.
func (f Failure) Class() Class { return f.class }

// Retry reports whether the next eligible route is tried.
func (f Failure) Retry() bool { return meanings[f.class].retry }

// Breaker is what f does to the route's breaker (see meaning.breaker).
func (f Failure) Breaker() error { return meanings[f.class].breaker }

// Result is the record's result when no later route succeeds.
func (f Failure) Result() string { return meanings[f.class].result }

// Client is the client's answer when no later route succeeds.
func (f Failure) Client() *apierror.Error {
	if f.client != nil {
		return f.client
	}
	return meanings[f.class].client
}

// Status is the status the record and the client get.
func (f Failure) Status() int { return f.Client().Status }

// AttemptError is what the record's attempt says went wrong ("" when its status says it).
func (f Failure) AttemptError() string { return meanings[f.class].attemptError }

// String names f's class.
func (f Failure) String() string {
	if f.class == none {
		return "none"
	}
	return meanings[f.class].name
}
