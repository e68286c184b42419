package server

import (
	"github.com/sekgate/gateway/dataplane/limits"
	"github.com/sekgate/gateway/dataplane/telemetry"
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/usage"
)

// refusedAuth counts an authentication refusal of an inference request by reason: the
// node's country or the account's policy (residency), or the key and account (auth). A
// node without a snapshot (503) is not a refusal of the request.
func (s *Server) refusedAuth(aerr *apierror.Error) {
	switch {
	case aerr.Status == 503:
	case aerr.Code == apierror.CodeResidencyUnsatisfied:
		s.tel.Refused(telemetry.RefuseResidency)
	default:
		s.tel.Refused(telemetry.RefuseAuth)
	}
}

// refusedLimit counts a limiter refusal.
func (s *Server) refusedLimit(d limits.Denial) {
	if d.Reason == limits.Concurrency {
		s.tel.Refused(telemetry.RefuseConcurrency)
		return
	}
	s.tel.Refused(telemetry.RefuseRate)
}

// Attempt outcomes besides the failure classes of proxy.Classify.
const (
	outcomeOK        = "ok"
	outcomeStatus4xx = "status_4xx"
	outcomeStatus429 = "status_429"
	outcomeStatus5xx = "status_5xx"
	outcomeStatus    = "status_other"
)

// statusOutcome names an upstream's non-200 status for gateway_upstream_attempts_total.
func statusOutcome(status int) string {
	switch {
	case status == 429:
		return outcomeStatus429
	case status >= 400 && status < 500:
		return outcomeStatus4xx
	case status >= 500 && status < 600:
		return outcomeStatus5xx
	}
	return outcomeStatus
}

// attemptOutcome names what an upstream attempt came to: ok, its failure class, or its
// status class.
func attemptOutcome(a *usage.Attempt) string {
	switch {
	case a.Error != "":
		return a.Error
	case a.Status == 200:
		return outcomeOK
	}
	return statusOutcome(a.Status)
}
