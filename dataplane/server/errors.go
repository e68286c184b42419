package server

import (
	"bytes"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/shared/apierror"
)

// Errors the edge answers with, built once.
var (
	errNotReady = apierror.New(503, apierror.TypeAPI, apierror.CodeNotReady,
		"the gateway has not received its configuration yet; retry shortly").WithRetryAfter(5)
	errMissingKey = apierror.New(401, apierror.TypeAuthentication, apierror.CodeInvalidAPIKey,
		"missing API key: send it as Authorization: Bearer <key>")
	errInvalidKey = apierror.New(401, apierror.TypeAuthentication, apierror.CodeInvalidAPIKey,
		"invalid API key")
	errDuplicateAuth = apierror.New(401, apierror.TypeAuthentication, apierror.CodeInvalidAPIKey,
		"more than one credential header of the same name: send the key once")
	errExpiredKey = apierror.New(401, apierror.TypeAuthentication, apierror.CodeAPIKeyExpired,
		"this API key has expired")
	errSuspended = apierror.New(403, apierror.TypePermission, apierror.CodeAccountSuspended,
		"this account is suspended")
	errResidency = apierror.New(403, apierror.TypePermission, apierror.CodeResidencyUnsatisfied,
		"no route of this deployment satisfies the account's residency policy")
	errBalance = apierror.New(402, apierror.TypeInsufficientQuota, apierror.CodeInsufficientQuota,
		"balance exhausted: top up the account to continue")
	errModelNotFound = apierror.New(404, apierror.TypeNotFound, apierror.CodeModelNotFound,
		"the model does not exist or is not available to this account").WithParam("model")
	errUnsupportedProtocol = apierror.New(400, apierror.TypeInvalidRequest, apierror.CodeUnsupportedProtocol,
		"no approved route of this model supports this protocol").WithParam("model")
	errTooLarge = apierror.New(413, apierror.TypeTooLarge, apierror.CodeBodyTooLarge,
		"request body exceeds the 8 MiB limit")
	errTooLargeSystemOne = apierror.New(413, apierror.TypeTooLarge, apierror.CodeBodyTooLarge,
		"request body exceeds the 128 KiB limit of /v1/systemone")
	errEndpointNotFound = apierror.New(404, apierror.TypeNotFound, apierror.CodeEndpointNotFound,
		"unknown endpoint")
	errMethodNotAllowed = apierror.New(405, apierror.TypeInvalidRequest, apierror.CodeMethodNotAllowed,
		"method not allowed on this endpoint")
	errNotSupported = apierror.New(501, apierror.TypeNotSupported, apierror.CodeEndpointNotSupported,
		"this endpoint family is not supported by the service; nothing was forwarded")
	errBadRequest = apierror.New(400, apierror.TypeInvalidRequest, "", "malformed request")
	errInternal   = apierror.New(500, apierror.TypeAPI, apierror.CodeInternal, "internal error")
	errNoRoute    = apierror.New(503, apierror.TypeOverloaded, apierror.CodeNoRoute,
		"no route can take the request right now; retry shortly").WithRetryAfter(2)
	errControlPlane = apierror.New(503, apierror.TypeAPI, apierror.CodeNotReady,
		"the account service is unavailable; retry shortly").WithRetryAfter(5)
)

var messagesPrefix = []byte("/v1/messages")

// messagesStyle reports whether errors on this request use the Messages-style envelope.
func messagesStyle(ctx *fasthttp.RequestCtx) bool { return messagesPath(ctx.Path()) }

// messagesPath reports whether the path p (a query may follow) is a Messages-style one.
func messagesPath(p []byte) bool {
	return bytes.HasPrefix(p, messagesPrefix) && (len(p) == len(messagesPrefix) || p[len(messagesPrefix)] == '/' || p[len(messagesPrefix)] == '?')
}

// writeError renders e as the interface's JSON envelope. The envelope bytes of the shared
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
	ctx.SetBody(envelope(e, ms))
}

// envelope caches the JSON of the package's fixed errors.
func envelope(e *apierror.Error, ms bool) []byte {
	if c, ok := cachedEnvelopes[e]; ok {
		return c[b2i(ms)]
	}
	return e.JSON(ms)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

var cachedEnvelopes = func() map[*apierror.Error][2][]byte {
	m := map[*apierror.Error][2][]byte{}
	for _, e := range []*apierror.Error{errNotReady, errMissingKey, errInvalidKey, errDuplicateAuth, errExpiredKey, errSuspended,
		errResidency, errBalance, errModelNotFound, errUnsupportedProtocol, errTooLarge, errTooLargeSystemOne,
		errEndpointNotFound, errMethodNotAllowed, errNotSupported, errBadRequest, errInternal, errNoRoute, errControlPlane} {
		m[e] = [2][]byte{e.JSON(false), e.JSON(true)}
	}
	return m
}()
