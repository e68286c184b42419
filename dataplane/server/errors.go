package server

import (
	"bytes"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/shared/apierror"
)

// Every error the server itself answers with, built once and declared here (the stages
// declare theirs: admit, plan, outcome, relay). fixed registers each one's envelopes
// (OpenAI-style and Messages-style) for writeError; failures the control plane answers too
// take the shared wording (shared/apierror).
var (
	// Paths and methods.
	errEndpointNotFound = fixed(apierror.ErrEndpointNotFound)
	errMethodNotAllowed = fixed(apierror.ErrMethodNotAllowed)
	errNotSupported     = fixed(apierror.New(501, apierror.TypeNotSupported, apierror.CodeEndpointNotSupported,
		"this endpoint family is not supported by the service; nothing was forwarded"))
	errInternal = fixed(apierror.ErrInternal)

	// Request framing and bodies (body.go).
	errBadRequest = fixed(apierror.New(400, apierror.TypeInvalidRequest, "", "malformed request"))
	errFraming    = fixed(apierror.New(400, apierror.TypeInvalidRequest, "",
		"malformed request framing: Content-Length together with Transfer-Encoding, or a folded header line"))
	errHeadersTooLarge = fixed(apierror.New(431, apierror.TypeInvalidRequest, apierror.CodeHeadersTooLarge,
		"request headers too large"))
	errReadTimeout = fixed(apierror.New(408, apierror.TypeInvalidRequest, apierror.CodeRequestTimeout,
		"timed out reading the request"))
	errTooLarge = fixed(apierror.New(413, apierror.TypeTooLarge, apierror.CodeBodyTooLarge,
		"request body exceeds the 8 MiB limit"))
	errTooLargeSystemOne = fixed(apierror.New(413, apierror.TypeTooLarge, apierror.CodeBodyTooLarge,
		"request body exceeds the 128 KiB limit of /v1/systemone"))
	errTooLargeForward = fixed(apierror.New(413, apierror.TypeTooLarge, apierror.CodeBodyTooLarge,
		"request body exceeds the 1 MiB limit of this endpoint"))

	// Connection caps (dataplane/edge).
	errTooManyAddrRequests = fixed(apierror.New(429, apierror.TypeRateLimit, apierror.CodeTooManyConnections,
		"too many requests in progress from this address").WithRetryAfter(1))
	errTooManyConns = fixed(apierror.New(503, apierror.TypeOverloaded, apierror.CodeTooManyConnections,
		"the gateway has too many open connections; retry shortly"))
	errTooManyAddrConns = fixed(apierror.New(429, apierror.TypeRateLimit, apierror.CodeTooManyConnections,
		"too many open connections from this address; reuse connections or close idle ones"))

	// The control plane behind the forwarded account paths (forward.go).
	errControlPlane = fixed(apierror.New(503, apierror.TypeAPI, apierror.CodeNotReady,
		"the account service is unavailable; retry shortly").WithRetryAfter(5))
)

var messagesPrefix = []byte("/v1/messages")

// messagesStyle reports whether errors on this request use the Messages-style envelope.
func messagesStyle(ctx *fasthttp.RequestCtx) bool { return messagesPath(ctx.Path()) }

// messagesPath reports whether the path p (a query may follow) is a Messages-style one.
func messagesPath(p []byte) bool {
	return bytes.HasPrefix(p, messagesPrefix) && (len(p) == len(messagesPrefix) || p[len(messagesPrefix)] == '/' || p[len(messagesPrefix)] == '?')
}

// writeError renders e as the interface's JSON envelope. The envelope bytes of the fixed
// errors above are cached.
func writeError(ctx *fasthttp.RequestCtx, e *apierror.Error) {
	writeErrorStyle(ctx, e, messagesStyle(ctx))
}

// writeErrorStyle is writeError with the envelope's style given (Messages-style when ms).
func writeErrorStyle(ctx *fasthttp.RequestCtx, e *apierror.Error, ms bool) {
	ctx.Response.ResetBody()
	ctx.SetStatusCode(e.Status)
	ctx.SetContentType("application/json")
	if e.RetryAfter > 0 {
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	ctx.SetBody(apierror.Envelope(e, ms))
}

// fixed registers e's envelopes with apierror.Fixed and returns e.
func fixed(e *apierror.Error) *apierror.Error { return apierror.Fixed(e) }
