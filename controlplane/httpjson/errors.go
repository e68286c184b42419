package httpjson

import (
	"net/http"

	"github.com/sekgate/gateway/shared/apierror"
)

// The control plane's fixed error answers, declared once for the api, payments and signup
// handlers. Failures the data plane answers too take the shared wording (shared/apierror).
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
)
