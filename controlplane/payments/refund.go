package payments

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/stripe/stripe-go/v76"

	"github.com/sekgate/gateway/controlplane/httpjson"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/money"
)

// ChargeEvent is the part of a charge.refunded or charge.dispute.created event the
// webhook needs.
type ChargeEvent struct {
	EventID  string
	Type     string
	Created  time.Time
	Livemode bool
	ChargeID string
	// PaymentIntentID finds the checkout session (recorded from its checkout events).
	PaymentIntentID string
	Currency        string
	// RefundedOre is the charge's refunded total so far (charge.refunded).
	RefundedOre int64
	// DisputeID, DisputeOre and Reason describe a dispute (charge.dispute.created).
	DisputeID  string
	DisputeOre int64
	Reason     string
}

// ApplyCharge records a refund or dispute event and acts on it in one transaction.
//
// A refund debits the session's account by what the charge's refunded total adds to what
// earlier events debited (payment_refunds keeps the total per charge; the ledger entry's
// reference is refund:<charge>:<total>), so repeated, reordered and partial refund events
// debit exactly the refunded total, never more than the session's amount. The balance may
// go below zero. A dispute is recorded (payment_disputes, once per dispute ID) and
// suspends the account: its keys stop working on every node until an operator lifts the
// suspension (gatewayctl accounts unsuspend). Events in the other mode, or for a payment
// that is not one of the gateway's checkout sessions, are recorded and change nothing.
func ApplyCharge(ctx context.Context, l Ledger, ev ChargeEvent, live bool) (ApplyResult, error) {
	var res ApplyResult
	err := l.InPaymentTx(ctx, func(tx *store.PaymentTx) error {
		res = ApplyResult{}
		sess, found, err := tx.SessionByPaymentIntent(ctx, ev.PaymentIntentID)
		if err != nil {
			return err
		}
		var outcome Outcome
		switch {
		case ev.Livemode != live || (found && sess.Livemode != live):
			outcome = OutcomeWrongMode
		case !found:
			outcome = OutcomeUnknownSession
		case ev.Currency != sess.Currency:
			outcome = OutcomeAmountMismatch
		}
		amount := ev.RefundedOre
		if ev.Type == EventDisputeCreated {
			amount = ev.DisputeOre
		}
		// An event whose payment no checkout event has named yet keeps what it needs to be
		// applied when one does (replayPending).
		inserted, err := tx.InsertChargeEvent(ctx, store.PaymentEvent{EventID: ev.EventID, Type: ev.Type,
			SessionID: sess.ID, AccountID: sess.AccountID, AmountOre: amount, Currency: ev.Currency, Livemode: ev.Livemode,
			Outcome: string(outcome), Created: ev.Created, PaymentIntentID: ev.PaymentIntentID, ChargeID: ev.ChargeID,
			DisputeID: ev.DisputeID, Reason: ev.Reason})
		if err != nil {
			return err
		}
		if !inserted {
			res.Outcome = OutcomeDuplicateEvent
			return nil
		}
		if outcome != "" {
			res.Outcome = outcome
			return nil
		}
		if ev.Type == EventDisputeCreated {
			outcome, err = applyDispute(ctx, tx, ev, sess)
		} else {
			outcome, err = applyRefund(ctx, tx, ev, sess, &res)
		}
		if err != nil {
			return err
		}
		return markOutcome(ctx, tx, ev.EventID, outcome, &res)
	})
	if err != nil {
		return ApplyResult{}, err
	}
	return res, nil
}

// replayPending applies the refund and dispute events of payment intent pi that were
// recorded as unknown_session because they arrived before any checkout event named pi;
// sess is the session a checkout event has just tied to pi. It returns how many it applied.
func replayPending(ctx context.Context, tx *store.PaymentTx, sess Session, pi string, live bool) (int, error) {
	pending, err := tx.PendingChargeEvents(ctx, pi, string(OutcomeUnknownSession), EventChargeRefunded, EventDisputeCreated)
	if err != nil {
		return 0, err
	}
	for _, pe := range pending {
		ev := ChargeEvent{EventID: pe.EventID, Type: pe.Type, Livemode: pe.Livemode, ChargeID: pe.ChargeID,
			PaymentIntentID: pi, Currency: pe.Currency, RefundedOre: pe.AmountOre, DisputeID: pe.DisputeID,
			DisputeOre: pe.AmountOre, Reason: pe.Reason}
		var res ApplyResult
		var outcome Outcome
		switch {
		case ev.Livemode != live || sess.Livemode != live:
			outcome = OutcomeWrongMode
		case ev.Currency != sess.Currency:
			outcome = OutcomeAmountMismatch
		case ev.Type == EventDisputeCreated:
			outcome, err = applyDispute(ctx, tx, ev, sess)
		default:
			outcome, err = applyRefund(ctx, tx, ev, sess, &res)
		}
		if err != nil {
			return 0, err
		}
		if err := tx.AttachEvent(ctx, ev.EventID, sess.ID, sess.AccountID); err != nil {
			return 0, err
		}
		if err := markOutcome(ctx, tx, ev.EventID, outcome, &res); err != nil {
			return 0, err
		}
	}
	return len(pending), nil
}

// applyRefund debits what a charge's refunded total adds, within what the checkout
// session has left to refund across all of its charges (a payment intent may have several
// charges: each refund event names one, and together they never debit more than the session
// credited).
func applyRefund(ctx context.Context, tx *store.PaymentTx, ev ChargeEvent, sess Session, res *ApplyResult) (Outcome, error) {
	sessionRefunded, err := tx.LockSessionRefunds(ctx, sess.ID)
	if err != nil {
		return "", err
	}
	prev, err := tx.LockRefund(ctx, ev.ChargeID, sess.ID, sess.AccountID)
	if err != nil {
		return "", err
	}
	total := min(max(ev.RefundedOre, 0), sess.AmountOre)
	// The session's room: its amount less what its charges have had debited (this one's
	// prev included).
	total = min(total, prev+max(sess.AmountOre-sessionRefunded, 0))
	if total <= prev {
		return OutcomeAlreadyRefunded, nil
	}
	micro, err := money.OreToMicro(total - prev)
	if err != nil {
		return "", fmt.Errorf("refund of %s: %w", ev.ChargeID, err)
	}
	if err := tx.SetRefunded(ctx, ev.ChargeID, total); err != nil {
		return "", err
	}
	cr, err := tx.Refund(ctx, store.Credit{
		AccountID:      sess.AccountID,
		AmountMicroSEK: -micro,
		Reference:      "refund:" + ev.ChargeID + ":" + strconv.FormatInt(total, 10),
		Note:           "refund of checkout " + sess.ID + " (charge " + ev.ChargeID + ", event " + ev.EventID + ")",
	})
	if err != nil {
		return "", fmt.Errorf("debit refund of %s from %s: %w", ev.ChargeID, sess.AccountID, err)
	}
	res.AmountMicroSEK = -micro
	res.BalanceMicroSEK = cr.BalanceMicroSEK
	return OutcomeRefunded, nil
}

func applyDispute(ctx context.Context, tx *store.PaymentTx, ev ChargeEvent, sess Session) (Outcome, error) {
	inserted, err := tx.InsertDispute(ctx, store.PaymentEvent{EventID: ev.EventID, ChargeID: ev.ChargeID,
		DisputeID: ev.DisputeID, AmountOre: ev.DisputeOre, Reason: ev.Reason}, sess.ID, sess.AccountID)
	if err != nil {
		return "", err
	}
	if !inserted {
		return OutcomeAlreadyDisputed, nil
	}
	// Nodes refuse the account's keys with 403 account_suspended within seconds.
	if err := tx.SuspendAccount(ctx, sess.AccountID); err != nil {
		return "", fmt.Errorf("after dispute %s: %w", ev.DisputeID, err)
	}
	return OutcomeAccountSuspended, nil
}

func idOf(pi *stripe.PaymentIntent) string {
	if pi == nil {
		return ""
	}
	return pi.ID
}

// chargeEvent reads a charge.refunded (data.object: charge) or charge.dispute.created
// (data.object: dispute) event.
func chargeEvent(ev stripe.Event) (ChargeEvent, error) {
	if ev.Data == nil || len(ev.Data.Raw) == 0 {
		return ChargeEvent{}, fmt.Errorf("%w: no data.object", errBadEvent)
	}
	ce := ChargeEvent{EventID: ev.ID, Type: string(ev.Type), Livemode: ev.Livemode}
	if ev.Created > 0 {
		ce.Created = time.Unix(ev.Created, 0).UTC()
	}
	switch string(ev.Type) {
	case EventChargeRefunded:
		var c stripe.Charge
		if err := json.Unmarshal(ev.Data.Raw, &c); err != nil {
			return ChargeEvent{}, fmt.Errorf("%w: data.object is not a charge: %v", errBadEvent, err)
		}
		ce.ChargeID, ce.PaymentIntentID, ce.Currency, ce.RefundedOre = c.ID, idOf(c.PaymentIntent), string(c.Currency), c.AmountRefunded
		if ce.ChargeID == "" || ce.RefundedOre < 0 {
			return ChargeEvent{}, fmt.Errorf("%w: charge without id or with a negative refunded amount", errBadEvent)
		}
	case EventDisputeCreated:
		var d stripe.Dispute
		if err := json.Unmarshal(ev.Data.Raw, &d); err != nil {
			return ChargeEvent{}, fmt.Errorf("%w: data.object is not a dispute: %v", errBadEvent, err)
		}
		ce.DisputeID, ce.PaymentIntentID, ce.Currency, ce.DisputeOre, ce.Reason = d.ID, idOf(d.PaymentIntent), string(d.Currency), d.Amount, string(d.Reason)
		if d.Charge != nil {
			ce.ChargeID = d.Charge.ID
		}
		if ce.DisputeID == "" {
			return ChargeEvent{}, fmt.Errorf("%w: dispute without id", errBadEvent)
		}
	}
	return ce, nil
}

// serveChargeEvent applies a refund or dispute event and answers the provider: 200 for
// every outcome (a refused event would be refused again on every retry), 500 when the
// database failed so the provider retries.
func (h *Webhook) serveChargeEvent(w http.ResponseWriter, r *http.Request, log *slog.Logger, ev stripe.Event) {
	ctx := r.Context()
	ce, err := chargeEvent(ev)
	if err != nil {
		ackUnusable(ctx, w, log, err)
		return
	}
	res, err := ApplyCharge(ctx, h.cfg.Ledger, ce, h.live)
	if err != nil {
		answerRetry(ctx, w, log, err)
		return
	}
	noteOutcome(w, res.Outcome)
	attrs := []any{"outcome", string(res.Outcome), "charge_id", ce.ChargeID, "payment_intent_id", ce.PaymentIntentID,
		"dispute_id", ce.DisputeID, "refunded_ore", ce.RefundedOre, "disputed_ore", ce.DisputeOre, "livemode", ce.Livemode}
	switch {
	case res.Outcome.Refused():
		log.ErrorContext(ctx, "payment event refused: nothing changed; resolve by hand if genuine", attrs...)
	case res.Outcome == OutcomeRefunded:
		log.WarnContext(ctx, "refund debited from the account", append(attrs, "amount_micro_sek", res.AmountMicroSEK, "balance_micro_sek", res.BalanceMicroSEK)...)
	case res.Outcome == OutcomeAccountSuspended:
		log.ErrorContext(ctx, "payment disputed: account suspended until an operator lifts it", attrs...)
	default:
		log.InfoContext(ctx, "payment event recorded", attrs...)
	}
	httpjson.WriteJSON(w, http.StatusOK, received{true})
}
