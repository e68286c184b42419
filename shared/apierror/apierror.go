// Package apierror is the interface's JSON error envelope, with the types and codes the
// gateway uses. HTTP statuses are chosen at the edge; this package only renders.
package apierror

import (
	"encoding/json"
	"strconv"
)

// Error types.
const (
	TypeInvalidRequest    = "invalid_request_error"
	TypeAuthentication    = "authentication_error"
	TypePermission        = "permission_error"
	TypeNotFound          = "not_found_error"
	TypeInsufficientQuota = "insufficient_quota"
	TypeRateLimit         = "rate_limit_error"
	TypeAPI               = "api_error"
	TypeUpstream          = "upstream_error"
	TypeOverloaded        = "overloaded_error"
	TypeTimeout           = "timeout_error"
	TypeNotSupported      = "not_supported_error"
	TypeTooLarge          = "request_too_large"
)

// Error codes.
const (
	CodeInvalidAPIKey        = "invalid_api_key"
	CodeAPIKeyExpired        = "api_key_expired"
	CodeAPIKeyRevoked        = "api_key_revoked"
	CodeInsufficientQuota    = "insufficient_quota"
	CodeBudgetExceeded       = "budget_exceeded" // an account's or key's spend budget is used up
	CodeAccountSuspended     = "account_suspended"
	CodeResidencyUnsatisfied = "residency_unsatisfiable"
	CodeModelNotFound        = "model_not_found"
	CodeEndpointNotFound     = "endpoint_not_found"
	CodeRequestNotFound      = "request_not_found"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeEndpointNotSupported = "endpoint_not_supported"
	CodeUnsupportedProtocol  = "unsupported_protocol"
	CodeBodyTooLarge         = "request_too_large"
	CodeRateLimited          = "rate_limit_exceeded"
	CodeConcurrencyLimited   = "concurrency_limit_exceeded"
	CodeProviderRateLimited  = "provider_rate_limited"
	CodeProviderError        = "provider_error"
	CodeNoRoute              = "no_route_available"
	CodeProviderTimeout      = "provider_timeout"
	CodeNotReady             = "not_ready"
	CodeInternal             = "internal_error"
	CodeNotFound             = "not_found"
	CodeConflict             = "conflict"
	CodeUnavailable          = "unavailable"
	CodeInvalidAdminToken    = "invalid_admin_token"
	CodeOperatorTokenExpired = "operator_token_expired" // an operator API token past its expiry
	CodeOperatorTokenRevoked = "operator_token_revoked" // an operator API token revoked
	CodeInvalidNodeToken     = "invalid_node_token"
	CodeInvalidSignature     = "invalid_signature"
	CodePaymentProviderError = "payment_provider_error"
	CodeProviderRejected     = "provider_rejected" // the provider refused the input (4xx)
	CodeRequestTimeout       = "request_timeout"
	CodeHeadersTooLarge      = "request_header_fields_too_large"
	CodeTooManyConnections   = "too_many_connections"
	CodeRoleInsufficient     = "role_insufficient"    // the operator's role does not allow the action
	CodeLoginRateLimited     = "login_rate_limited"   // too many operator logins
	CodeInvalidCredentials   = "invalid_credentials"  // unknown operator or wrong password
	CodeProtocolUnsupported  = "protocol_unsupported" // a node speaks an internal protocol version the control plane does not serve
)

// Error is one gateway error: the HTTP status and the envelope's fields.
type Error struct {
	Status  int
	Type    string
	Message string
	Code    string // empty renders as null
	Param   string // empty renders as null
	DocURL  string // empty omits documentation_url
	// RetryAfter, when positive, is sent as a Retry-After header (seconds).
	RetryAfter int
}

func (e *Error) Error() string { return strconv.Itoa(e.Status) + " " + e.Type + ": " + e.Message }

// New builds an Error.
func New(status int, typ, code, message string) *Error {
	return &Error{Status: status, Type: typ, Code: code, Message: message}
}

// InvalidParam is a 400 invalid_request_error naming the offending parameter.
func InvalidParam(param, message string) *Error {
	return &Error{Status: 400, Type: TypeInvalidRequest, Param: param, Message: message}
}

// WithParam returns a copy with Param set.
func (e *Error) WithParam(p string) *Error { c := *e; c.Param = p; return &c }

// WithRetryAfter returns a copy with RetryAfter set.
func (e *Error) WithRetryAfter(s int) *Error { c := *e; c.RetryAfter = s; return &c }

// WithDoc returns a copy with DocURL set.
func (e *Error) WithDoc(u string) *Error { c := *e; c.DocURL = u; return &c }

type body struct {
	Type   string  `json:"type,omitempty"`
	Error  inner   `json:"error"`
	DocURL *string `json:"documentation_url,omitempty"`
}

type inner struct {
	Type    string  `json:"type"`
	Message string  `json:"message"`
	Code    *string `json:"code"`
	Param   *string `json:"param"`
}

// JSON renders the envelope. messagesStyle adds the top-level "type":"error" that
// Messages-style clients expect.
func (e *Error) JSON(messagesStyle bool) []byte {
	b := body{Error: inner{Type: e.Type, Message: e.Message}}
	if messagesStyle {
		b.Type = "error"
	}
	if e.Code != "" {
		b.Error.Code = &e.Code
	}
	if e.Param != "" {
		b.Error.Param = &e.Param
	}
	if e.DocURL != "" {
		b.DocURL = &e.DocURL
	}
	out, _ := json.Marshal(b) // cannot fail: only strings
	return out
}

// fixedEnvelopes holds the rendered envelopes of the errors registered with Fixed. It is
// written only while packages initialise (Fixed is called from package-level variable
// declarations), so reads need no lock.
var fixedEnvelopes = map[*Error][2][]byte{}

// Fixed renders e's two envelopes once, for Envelope, and returns e. Call it only from
// package-level variable declarations.
func Fixed(e *Error) *Error {
	fixedEnvelopes[e] = [2][]byte{e.JSON(false), e.JSON(true)}
	return e
}

// Envelope is e.JSON(messagesStyle), rendered once for errors registered with Fixed. The
// result must not be modified.
func Envelope(e *Error, messagesStyle bool) []byte {
	if c, ok := fixedEnvelopes[e]; ok {
		if messagesStyle {
			return c[1]
		}
		return c[0]
	}
	return e.JSON(messagesStyle)
}
