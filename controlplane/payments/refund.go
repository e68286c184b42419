package payments

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
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
	err := l.InTx(ctx, func(tx pgx.Tx) error {
		res = ApplyResult{}
		sess, found, err := sessionByPaymentIntent(ctx, tx, ev.PaymentIntentID)
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
		tag, err := tx.Exec(ctx, `INSERT INTO payment_events (event_id, type, checkout_session_id, account_id,
				payment_status, amount_ore, currency, livemode, outcome, provider_created_at,
				payment_intent_id, charge_id, dispute_id, reason)
			VALUES ($1, $2, $3, $4, '', $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (event_id) DO NOTHING`,
			ev.EventID, ev.Type, sess.ID, sess.AccountID, amount, ev.Currency, ev.Livemode, string(outcome), nullTime(ev.Created),
			ev.PaymentIntentID, ev.ChargeID, ev.DisputeID, ev.Reason)
		if err != nil {
			return fmt.Errorf("record payment event %s: %w", ev.EventID, err)
		}
		if tag.RowsAffected() == 0 {
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
			outcome, err = applyRefund(ctx, l, tx, ev, sess, &res)
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
func replayPending(ctx context.Context, l Ledger, tx pgx.Tx, sess Session, pi string, live bool) (int, error) {
	rows, err := tx.Query(ctx, `SELECT event_id, type, livemode, currency, amount_ore, charge_id, dispute_id, reason
		FROM payment_events WHERE payment_intent_id = $1 AND outcome = $2 AND type IN ($3, $4)
		ORDER BY received_at, event_id FOR UPDATE`, pi, string(OutcomeUnknownSession), EventChargeRefunded, EventDisputeCreated)
	if err != nil {
		return 0, fmt.Errorf("pending events of %s: %w", pi, err)
	}
	pending, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ChargeEvent, error) {
		ev := ChargeEvent{PaymentIntentID: pi}
		var amount int64
		err := r.Scan(&ev.EventID, &ev.Type, &ev.Livemode, &ev.Currency, &amount, &ev.ChargeID, &ev.DisputeID, &ev.Reason)
		ev.RefundedOre, ev.DisputeOre = amount, amount
		return ev, err
	})
	if err != nil {
		return 0, fmt.Errorf("pending events of %s: %w", pi, err)
	}
	for _, ev := range pending {
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
			outcome, err = applyRefund(ctx, l, tx, ev, sess, &res)
		}
		if err != nil {
			return 0, err
		}
		if _, err := tx.Exec(ctx, `UPDATE payment_events SET checkout_session_id = $2, account_id = $3 WHERE event_id = $1`,
			ev.EventID, sess.ID, sess.AccountID); err != nil {
			return 0, fmt.Errorf("update payment event %s: %w", ev.EventID, err)
		}
		if err := markOutcome(ctx, tx, ev.EventID, outcome, &res); err != nil {
			return 0, err
		}
	}
	return len(pending), nil
}

func applyRefund(ctx context.Context, l Ledger, tx pgx.Tx, ev ChargeEvent, sess Session, res *ApplyResult) (Outcome, error) {
	total := min(max(ev.RefundedOre, 0), sess.AmountOre)
	if _, err := tx.Exec(ctx, `INSERT INTO payment_refunds (charge_id, checkout_session_id, account_id, refunded_ore)
		VALUES ($1, $2, $3, 0) ON CONFLICT (charge_id) DO NOTHING`, ev.ChargeID, sess.ID, sess.AccountID); err != nil {
		return "", fmt.Errorf("record refund of %s: %w", ev.ChargeID, err)
	}
	var prev int64
	if err := tx.QueryRow(ctx, `SELECT refunded_ore FROM payment_refunds WHERE charge_id = $1 FOR UPDATE`, ev.ChargeID).Scan(&prev); err != nil {
		return "", fmt.Errorf("read refund of %s: %w", ev.ChargeID, err)
	}
	if total <= prev {
		return OutcomeAlreadyRefunded, nil
	}
	micro, err := money.OreToMicro(total - prev)
	if err != nil {
		return "", fmt.Errorf("refund of %s: %w", ev.ChargeID, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE payment_refunds SET refunded_ore = $2, updated_at = now() WHERE charge_id = $1`, ev.ChargeID, total); err != nil {
		return "", fmt.Errorf("update refund of %s: %w", ev.ChargeID, err)
	}
	cr, err := l.RefundTx(ctx, tx, store.Credit{
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

func applyDispute(ctx context.Context, tx pgx.Tx, ev ChargeEvent, sess Session) (Outcome, error) {
	tag, err := tx.Exec(ctx, `INSERT INTO payment_disputes (dispute_id, charge_id, checkout_session_id, account_id, amount_ore, reason, event_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (dispute_id) DO NOTHING`,
		ev.DisputeID, ev.ChargeID, sess.ID, sess.AccountID, ev.DisputeOre, ev.Reason, ev.EventID)
	if err != nil {
		return "", fmt.Errorf("record dispute %s: %w", ev.DisputeID, err)
	}
	if tag.RowsAffected() == 0 {
		return OutcomeAlreadyDisputed, nil
	}
	// The accounts trigger notifies the snapshot compiler: nodes refuse the account's keys
	// with 403 account_suspended within seconds.
	if _, err := tx.Exec(ctx, `UPDATE accounts SET suspended = true WHERE id = $1`, sess.AccountID); err != nil {
		return "", fmt.Errorf("suspend %s after dispute %s: %w", sess.AccountID, ev.DisputeID, err)
	}
	return OutcomeAccountSuspended, nil
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
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
