package payments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/webhook"

	"github.com/sekgate/gateway/controlplane/httpjson"
	"github.com/sekgate/gateway/shared/apierror"
)

// Event types the webhook acts on.
const (
	EventCheckoutCompleted     = "checkout.session.completed"
	EventAsyncPaymentSucceeded = "checkout.session.async_payment_succeeded"
	EventAsyncPaymentFailed    = "checkout.session.async_payment_failed"
	EventCheckoutExpired       = "checkout.session.expired"
	EventChargeRefunded        = "charge.refunded"
	EventDisputeCreated        = "charge.dispute.created"
)

// HeaderSignature carries the provider's signature ("t=<unix>,v1=<hex>"). The provider's
// own name for it, Stripe-Signature, is read when this one is absent.
const (
	HeaderSignature         = "Payment-Signature"
	HeaderProviderSignature = "Stripe-Signature"
)

// maxWebhookBody bounds an event body; checkout session events are a few KiB.
const maxWebhookBody = 1 << 20

// WebhookConfig configures the webhook handler.
type WebhookConfig struct {
	// Secret is the endpoint's signing secret (whsec_...). Required.
	Secret string
	// SecretKey is the provider API key the top-up uses. Required: its mode (sk_live_ or
	// sk_test_) is the only livemode the webhook accepts.
	SecretKey string
	// Ledger records events and credits accounts. Required (*store.Store).
	Ledger Ledger
	// Tolerance is the accepted age of a signature timestamp. Default 300 s.
	Tolerance time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// OnEvent, when set, is told each delivery's event type (a handled type, "other", or
	// "none" when no event was read) and outcome (an Outcome, "ignored", "refused_request"
	// or "error"); the ops metrics count them.
	OnEvent func(eventType, outcome string)
}

// Webhook serves POST /v1/stripe/webhook.
type Webhook struct {
	cfg  WebhookConfig
	live bool
	log  *slog.Logger
}

// NewWebhook validates cfg and fills defaults.
func NewWebhook(cfg WebhookConfig) (*Webhook, error) {
	if cfg.Secret == "" {
		return nil, errors.New("payments: WebhookConfig.Secret is required")
	}
	if cfg.Ledger == nil {
		return nil, errors.New("payments: WebhookConfig.Ledger is required")
	}
	live, err := KeyLivemode(cfg.SecretKey)
	if err != nil {
		return nil, fmt.Errorf("payments: WebhookConfig.SecretKey: %w", err)
	}
	if cfg.Tolerance <= 0 {
		cfg.Tolerance = webhook.DefaultTolerance
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Webhook{cfg: cfg, live: live, log: cfg.Logger}, nil
}

type received struct {
	Received bool `json:"received"`
}

func badSignature(msg string) *apierror.Error {
	return apierror.New(http.StatusBadRequest, apierror.TypeInvalidRequest, apierror.CodeInvalidSignature, msg).WithParam(HeaderSignature)
}

// serve verifies and applies one event (ServeHTTP reports it to OnEvent).
func (h *Webhook) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		methodNotAllowed(w, r)
		return
	}
	ctx := r.Context()
	ev, ok := h.verifiedEvent(w, r)
	if !ok {
		return
	}
	if ev.ID == "" {
		httpjson.WriteError(w, httpjson.ErrEventWithoutID)
		return
	}
	noteEvent(w, string(ev.Type))
	log := h.log.With("event_id", ev.ID, "event_type", string(ev.Type))
	var ce CheckoutEvent
	var err error
	switch string(ev.Type) {
	case EventChargeRefunded, EventDisputeCreated:
		h.serveChargeEvent(w, r, log, ev)
		return
	case EventCheckoutCompleted, EventAsyncPaymentSucceeded, EventAsyncPaymentFailed, EventCheckoutExpired:
		ce, err = checkoutEvent(ev)
		if err != nil {
			ackUnusable(ctx, w, log, err)
			return
		}
	default:
		log.DebugContext(ctx, "payment event type not handled; acknowledged")
		httpjson.WriteJSON(w, http.StatusOK, received{true})
		return
	}
	res, err := Apply(ctx, h.cfg.Ledger, ce, h.live)
	if err != nil {
		answerRetry(ctx, w, log, err)
		return
	}
	noteOutcome(w, res.Outcome)
	attrs := []any{"outcome", string(res.Outcome), "checkout_session_id", ce.SessionID, "account_id", ce.AccountID,
		"amount_ore", ce.AmountOre, "currency", ce.Currency, "payment_status", ce.PaymentStatus, "livemode", ce.Livemode,
		"earlier_refund_or_dispute_events_applied", res.Replayed}
	switch {
	case res.Outcome.Refused():
		log.ErrorContext(ctx, "payment event refused: nothing credited; resolve by hand if genuine", attrs...)
	case res.Outcome == OutcomeCredited:
		log.InfoContext(ctx, "account credited from payment", append(attrs, "balance_micro_sek", res.BalanceMicroSEK)...)
	default:
		log.InfoContext(ctx, "payment event recorded", attrs...)
	}
	httpjson.WriteJSON(w, http.StatusOK, received{true})
}

// verifiedEvent reads the request's event and checks its signature; false once the
// sender has its error.
func (h *Webhook) verifiedEvent(w http.ResponseWriter, r *http.Request) (stripe.Event, bool) {
	payload, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			httpjson.WriteError(w, httpjson.ErrEventTooLarge)
			return stripe.Event{}, false
		}
		httpjson.WriteError(w, httpjson.ErrEventUnreadable)
		return stripe.Event{}, false
	}
	sig := r.Header.Get(HeaderSignature)
	if sig == "" {
		sig = r.Header.Get(HeaderProviderSignature)
	}
	if sig == "" {
		httpjson.WriteError(w, badSignature("the "+HeaderSignature+" header is missing"))
		return stripe.Event{}, false
	}
	ev, err := webhook.ConstructEventWithOptions(payload, sig, h.cfg.Secret, webhook.ConstructEventOptions{
		Tolerance:                h.cfg.Tolerance,
		IgnoreAPIVersionMismatch: true,
	})
	if err != nil {
		h.log.WarnContext(r.Context(), "payment webhook refused", "err", err)
		switch {
		case errors.Is(err, webhook.ErrTooOld):
			httpjson.WriteError(w, badSignature("the signature timestamp is outside the tolerance"))
		case errors.Is(err, webhook.ErrInvalidHeader), errors.Is(err, webhook.ErrNotSigned):
			httpjson.WriteError(w, badSignature("the "+HeaderSignature+" header is malformed"))
		case errors.Is(err, webhook.ErrNoValidSignature):
			httpjson.WriteError(w, badSignature("no valid signature"))
		default: // signature fine, body not an event
			httpjson.WriteError(w, httpjson.ErrNotAnEvent)
		}
		return stripe.Event{}, false
	}
	return ev, true
}

// checkoutEvent reads the checkout session of a checkout.session.* event.
func checkoutEvent(ev stripe.Event) (CheckoutEvent, error) {
	if ev.Data == nil || len(ev.Data.Raw) == 0 {
		return CheckoutEvent{}, fmt.Errorf("%w: no data.object", errBadEvent)
	}
	var s stripe.CheckoutSession
	if err := json.Unmarshal(ev.Data.Raw, &s); err != nil {
		return CheckoutEvent{}, fmt.Errorf("%w: data.object is not a checkout session: %v", errBadEvent, err)
	}
	account := s.ClientReferenceID
	if account == "" {
		account = s.Metadata["account_id"]
	}
	ce := CheckoutEvent{
		EventID:         ev.ID,
		Type:            string(ev.Type),
		Livemode:        ev.Livemode,
		SessionID:       s.ID,
		PaymentIntentID: idOf(s.PaymentIntent),
		AccountID:       account,
		PaymentStatus:   string(s.PaymentStatus),
		AmountOre:       s.AmountTotal,
		Currency:        string(s.Currency),
	}
	if ev.Created > 0 {
		ce.Created = time.Unix(ev.Created, 0).UTC()
	}
	switch string(ev.Type) {
	case EventCheckoutCompleted:
		if s.PaymentStatus == stripe.CheckoutSessionPaymentStatusPaid {
			ce.Credit = true
		} else {
			ce.Outcome = OutcomeNotPaid
		}
	case EventAsyncPaymentSucceeded:
		ce.Credit = true
	case EventCheckoutExpired:
		ce.Outcome = OutcomeExpired
	case EventAsyncPaymentFailed:
		ce.Outcome = OutcomePaymentFailed
	}
	return ce, nil
}

// ackUnusable acknowledges an event that cannot be used (200: the provider would send the
// same event again on every retry) and logs why.
func ackUnusable(ctx context.Context, w http.ResponseWriter, log *slog.Logger, err error) {
	log.ErrorContext(ctx, "payment event unusable; acknowledged without effect", "err", err)
	httpjson.WriteJSON(w, http.StatusOK, received{true})
}

// httpjson.ErrEventRetry answers an event the database failed to apply, so that the provider retries.

// answerRetry logs a failed apply and answers 500 so the provider sends the event again.
func answerRetry(ctx context.Context, w http.ResponseWriter, log *slog.Logger, err error) {
	log.ErrorContext(ctx, "apply payment event", "err", err)
	httpjson.WriteError(w, httpjson.ErrEventRetry)
}
