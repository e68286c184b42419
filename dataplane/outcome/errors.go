package outcome

import (
	"github.com/sekgate/gateway/shared/apierror"
)

// The client's answers to failed attempts; an answer that carries the server's message is
// built from these (Classify).
var (
	ErrNoRoute = apierror.Fixed(apierror.New(503, apierror.TypeOverloaded, apierror.CodeNoRoute,
		"no route can take the request right now; retry shortly").WithRetryAfter(2))
	ErrBodyEdit        = apierror.Fixed(apierror.InvalidParam("", "request body cannot be edited for the upstream"))
	ErrInvalidUpstream = apierror.Fixed(apierror.New(502, apierror.TypeUpstream, apierror.CodeProviderError,
		"the provider returned an invalid response"))
	ErrProviderTimeout = apierror.Fixed(apierror.New(504, apierror.TypeTimeout, apierror.CodeProviderTimeout,
		"the provider did not answer in time"))
	ErrProviderTransport = apierror.Fixed(apierror.New(502, apierror.TypeUpstream, apierror.CodeProviderError,
		"the provider could not be reached or broke the connection"))
	ErrProviderRateLimited = apierror.Fixed(apierror.New(429, apierror.TypeRateLimit, apierror.CodeProviderRateLimited,
		"the provider is at capacity; retry with backoff"))
	ErrProviderUnavailable = apierror.Fixed(apierror.New(503, apierror.TypeOverloaded, apierror.CodeNoRoute,
		"the provider is unavailable; retry shortly"))
	ErrProviderFailed = apierror.Fixed(apierror.New(502, apierror.TypeUpstream, apierror.CodeProviderError,
		"the provider failed to serve the request"))
	ErrProviderRefused = apierror.Fixed(apierror.New(400, apierror.TypeInvalidRequest, apierror.CodeProviderRejected,
		"the provider refused the request"))
	// ErrStreamInvalid ends a stream whose provider broke the protocol after the first byte.
	ErrStreamInvalid = apierror.Fixed(apierror.New(502, apierror.TypeUpstream, apierror.CodeProviderError,
		"the provider sent an invalid event; the output is incomplete"))
	ErrRouteMisconfigured = apierror.Fixed(apierror.New(503, apierror.TypeAPI, apierror.CodeNoRoute,
		"this model's routes are misconfigured on this gateway (the operator has been told); retrying will not help until they are fixed").WithRetryAfter(300))
	// ErrRouteUnreachable: the model's servers refused or did not answer the connection, or
	// every route's breaker is open after such failures.
	ErrRouteUnreachable = apierror.Fixed(apierror.New(503, apierror.TypeAPI, apierror.CodeNoRoute,
		"this model's servers cannot be reached from this gateway (the operator has been told); retrying soon will not help").WithRetryAfter(60))
	// ErrClientClosed is recorded when the client went away before any answer (nginx's
	// 499); nothing reaches the client.
	ErrClientClosed = &apierror.Error{Status: StatusClientClosed, Type: apierror.TypeAPI, Message: "client closed the request"}
)

// StatusClientClosed is recorded when the client went away before any answer (nginx's
// convention).
const StatusClientClosed = 499
