package httpjson

import (
	"net/http"

	"github.com/sekgate/gateway/shared/apierror"
)

// The control plane's fixed error answers, declared once for the api, payments and signup
// handlers (errors_test.go finds fixed answers built anywhere else). Failures the data plane answers too take the shared wording (shared/apierror).
// Answers that name the request's own values are built where they arise.
var (
	// ErrInternal is the 500 answer for a failure the caller must not see the details of.
	ErrInternal         = apierror.ErrInternal
	ErrEndpointNotFound = apierror.ErrEndpointNotFound
	ErrMethodNotAllowed = apierror.ErrMethodNotAllowed
	// ErrNotReady: the control plane has not compiled a snapshot yet.
	ErrNotReady = apierror.New(http.StatusServiceUnavailable, apierror.TypeAPI, apierror.CodeNotReady,
		"no snapshot compiled yet; retry shortly").WithRetryAfter(1)
	// ErrNoAccount: a customer path arrived without the account a node authenticated.
	ErrNoAccount = apierror.New(http.StatusUnauthorized, apierror.TypeAuthentication, apierror.CodeInvalidAPIKey,
		"the request carries no authenticated account")
	// ErrUnknownAccount: the authenticated account does not exist (any more).
	ErrUnknownAccount = apierror.New(http.StatusUnauthorized, apierror.TypeAuthentication, apierror.CodeInvalidAPIKey,
		"unknown account")
	// Admin API authentication (controlplane/api).
	ErrAdminAuthRequired = apierror.New(http.StatusUnauthorized, apierror.TypeAuthentication, apierror.CodeInvalidAdminToken,
		"A valid admin token, operator token or operator session is required (Authorization: Bearer <token>).")
	ErrOperatorTokenExpired = apierror.New(http.StatusUnauthorized, apierror.TypeAuthentication, apierror.CodeOperatorTokenExpired,
		"This operator token has expired; make a new one (console: API tokens, or gatewayctl tokens create).")
	ErrOperatorTokenRevoked = apierror.New(http.StatusUnauthorized, apierror.TypeAuthentication, apierror.CodeOperatorTokenRevoked,
		"This operator token was revoked; make a new one (console: API tokens, or gatewayctl tokens create).")
	ErrOthersTokens = apierror.New(http.StatusForbidden, apierror.TypePermission, apierror.CodeRoleInsufficient,
		"Only an admin sees and revokes other operators' tokens.")
	ErrAdminTokenNoOperator = apierror.InvalidParam("operator",
		"The admin token belongs to no operator: name the operator whose token to make (operator), or use an operator's own session or token.")
	ErrNoOIDC = apierror.New(http.StatusNotFound, apierror.TypeNotFound, apierror.CodeNotFound,
		"Sign-in through an OIDC provider is not configured.")
	ErrOIDCRefused = apierror.New(http.StatusForbidden, apierror.TypePermission, apierror.CodeInvalidCredentials,
		"The identity provider's account may not use this console.")
	ErrOIDCFailed = apierror.New(http.StatusUnauthorized, apierror.TypeAuthentication, apierror.CodeInvalidCredentials,
		"The sign-in with the identity provider failed; try again.")
	ErrLoginRateLimited = apierror.New(http.StatusTooManyRequests, apierror.TypeRateLimit, apierror.CodeLoginRateLimited,
		"Too many login attempts; wait a minute.")
	ErrInvalidCredentials = apierror.New(http.StatusUnauthorized, apierror.TypeAuthentication, apierror.CodeInvalidCredentials,
		"Unknown operator or wrong password.")
	// ErrServiceRateLimited: a key or account past its limit on /v1/service/* (the caller
	// sets Retry-After).
	ErrServiceRateLimited = apierror.New(http.StatusTooManyRequests, apierror.TypeRateLimit, apierror.CodeRateLimited,
		"Too many requests to this path for this API key or account; retry after the indicated delay.")
	ErrInvalidNodeToken = apierror.New(http.StatusUnauthorized, apierror.TypeAuthentication, apierror.CodeInvalidNodeToken,
		"A valid node token is required.")
	// ErrUnavailable: the database (or another dependency) failed; the caller may retry.
	ErrUnavailable = apierror.New(http.StatusServiceUnavailable, apierror.TypeAPI, apierror.CodeUnavailable,
		"The control plane cannot serve this now; try again later.").WithRetryAfter(1)
	ErrCancelled       = apierror.New(http.StatusServiceUnavailable, apierror.TypeAPI, "", "Request cancelled.")
	ErrRequestNotFound = apierror.New(http.StatusNotFound, apierror.TypeNotFound, apierror.CodeRequestNotFound,
		"No request record with this ID.")

	// Payments (controlplane/payments).
	ErrTopupTooLarge = apierror.New(http.StatusRequestEntityTooLarge, apierror.TypeTooLarge, apierror.CodeBodyTooLarge,
		"the top-up body is limited to 8 KiB").WithParam("amount_sek")
	ErrTopupUnreadable    = apierror.InvalidParam("amount_sek", "could not read the request body")
	ErrSessionNotRecorded = apierror.New(http.StatusInternalServerError, apierror.TypeAPI, apierror.CodeInternal,
		"the checkout session could not be recorded; try again")
	ErrPaymentProvider = apierror.New(http.StatusBadGateway, apierror.TypeUpstream, apierror.CodePaymentProviderError,
		"the payment provider could not create a checkout session; try again later")
	ErrEventTooLarge = apierror.New(http.StatusRequestEntityTooLarge, apierror.TypeTooLarge, apierror.CodeBodyTooLarge,
		"event body over 1 MiB")
	ErrEventUnreadable = apierror.New(http.StatusBadRequest, apierror.TypeInvalidRequest, "", "could not read the event body")
	ErrNotAnEvent      = apierror.New(http.StatusBadRequest, apierror.TypeInvalidRequest, "", "the body is not a payment event")
	ErrEventWithoutID  = apierror.New(http.StatusBadRequest, apierror.TypeInvalidRequest, "", "the event has no id")
	// ErrEventRetry: a correctly signed event could not be applied (the database failed);
	// the provider retries it.
	ErrEventRetry = apierror.New(http.StatusInternalServerError, apierror.TypeAPI, apierror.CodeInternal,
		"the event could not be applied; retry")

	// Signup form and review (controlplane/signup).
	ErrSignupRateLimited = apierror.New(http.StatusTooManyRequests, apierror.TypeRateLimit, apierror.CodeRateLimited,
		"too many access requests from this address; try again later")
	ErrSignupStatus    = apierror.InvalidParam("status", "status must be pending, approved or rejected")
	ErrSignupLimit     = apierror.InvalidParam("limit", "limit must be an integer from 1 to 1000")
	ErrBodyUnreadable  = apierror.New(http.StatusBadRequest, apierror.TypeInvalidRequest, "", "could not read the body")
	ErrSignupNotFound  = apierror.New(http.StatusNotFound, apierror.TypeNotFound, apierror.CodeNotFound, "Signup not found.")
	ErrSignupResidency = apierror.InvalidParam("residency", "residency must be se, eu or any (the signup's own value is not a policy)")
)
