package admit

import (
	"time"

	"github.com/sekgate/gateway/shared/apierror"
)

// Admission's refusals.
var (
	ErrNotReady = apierror.Fixed(apierror.New(503, apierror.TypeAPI, apierror.CodeNotReady,
		"the gateway has not received its configuration yet; retry shortly").WithRetryAfter(5))
	ErrMissingKey = apierror.Fixed(apierror.New(401, apierror.TypeAuthentication, apierror.CodeInvalidAPIKey,
		"missing API key: send it as Authorization: Bearer <key>"))
	ErrInvalidKey = apierror.Fixed(apierror.New(401, apierror.TypeAuthentication, apierror.CodeInvalidAPIKey,
		"invalid API key"))
	ErrDuplicateAuth = apierror.Fixed(apierror.New(401, apierror.TypeAuthentication, apierror.CodeInvalidAPIKey,
		"more than one credential header of the same name: send the key once"))
	ErrSuspended = apierror.Fixed(apierror.New(403, apierror.TypePermission, apierror.CodeAccountSuspended,
		"this account is suspended"))
	ErrResidency = apierror.Fixed(apierror.New(403, apierror.TypePermission, apierror.CodeResidencyUnsatisfied,
		"no route of this deployment satisfies the account's residency policy"))
	ErrBalance = apierror.Fixed(apierror.New(402, apierror.TypeInsufficientQuota, apierror.CodeInsufficientQuota,
		"balance exhausted: top up the account to continue"))
	// ErrSaturated refuses a request the fair queue cannot hold (its Retry-After is set per
	// refusal).
	ErrSaturated = apierror.Fixed(apierror.New(429, apierror.TypeRateLimit, apierror.CodeProviderRateLimited,
		"every model server that can serve this request is at capacity; retry after the indicated delay"))
)

// expiredKey is the 401 for a key past its expiry, saying when it expired.
func expiredKey(at time.Time) *apierror.Error {
	return apierror.New(401, apierror.TypeAuthentication, apierror.CodeAPIKeyExpired,
		"this API key expired at "+at.UTC().Format(time.RFC3339)+"; create a new key in the console")
}

// revokedKey is the 401 for a key the snapshot lists as revoked, saying when.
func revokedKey(at time.Time) *apierror.Error {
	return apierror.New(401, apierror.TypeAuthentication, apierror.CodeAPIKeyRevoked,
		"this API key was revoked at "+at.UTC().Format(time.RFC3339)+"; create a new key in the console")
}
