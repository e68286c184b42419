package payments

import "net/http"

// Figures the webhook and the top-up report to the control plane's ops metrics through
// WebhookConfig.OnEvent and TopupConfig.OnSession (both optional).

// webhookTypes are the event types counted under their own name; any other is "other".
var webhookTypes = []string{EventCheckoutCompleted, EventAsyncPaymentSucceeded, EventAsyncPaymentFailed,
	EventCheckoutExpired, EventChargeRefunded, EventDisputeCreated}

// observedWriter carries a delivery's event type and outcome from serve to ServeHTTP.
type observedWriter struct {
	http.ResponseWriter
	status             int
	eventType, outcome string
}

func (o *observedWriter) WriteHeader(code int) {
	if o.status == 0 {
		o.status = code
	}
	o.ResponseWriter.WriteHeader(code)
}

// ServeHTTP verifies and applies one event, then reports it to OnEvent.
func (h *Webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.cfg.OnEvent == nil {
		h.serve(w, r)
		return
	}
	o := &observedWriter{ResponseWriter: w, eventType: "none"}
	h.serve(o, r)
	outcome := o.outcome
	if outcome == "" {
		switch {
		case o.status >= 500:
			outcome = "error"
		case o.status >= 400:
			outcome = "refused_request" // bad signature, body or method: no event
		default:
			outcome = "ignored" // acknowledged without effect
		}
	}
	h.cfg.OnEvent(o.eventType, outcome)
}

// noteEvent records the verified event's type (bounded: handled types, else "other").
func noteEvent(w http.ResponseWriter, eventType string) {
	if o, ok := w.(*observedWriter); ok {
		o.eventType = "other"
		for _, t := range webhookTypes {
			if t == eventType {
				o.eventType = t
			}
		}
	}
}

// noteOutcome records the applied event's outcome (one of the Outcome constants).
func noteOutcome(w http.ResponseWriter, out Outcome) {
	if o, ok := w.(*observedWriter); ok {
		o.outcome = string(out)
	}
}
