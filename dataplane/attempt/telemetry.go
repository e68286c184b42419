package attempt

import (
	"go.opentelemetry.io/otel/attribute"

	"github.com/sekgate/gateway/dataplane/tracing"
	"github.com/sekgate/gateway/shared/usage"
)

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

// endAttemptSpan ends the last attempt's span with its outcome.
func (ex *Exchange) endAttemptSpan() {
	if ex.attemptSpan == (tracing.Child{}) {
		return
	}
	a := ex.Box.LastAttempt()
	failure := ""
	if out := attemptOutcome(a); out != outcomeOK {
		failure = out
	}
	ex.attemptSpan.End(failure, attribute.Int("http.response.status_code", a.Status))
	ex.attemptSpan = tracing.Child{}
}
