package payments

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/money"
)

// Ledger is what the webhook needs from the store: one transaction of the payment tables
// and the ledger (store.PaymentTx). *store.Store implements it.
type Ledger interface {
	InPaymentTx(ctx context.Context, fn func(tx *store.PaymentTx) error) error
}

// Outcome is what applying a checkout event did; it is stored with the event.
type Outcome string

// Outcomes.
const (
	OutcomeCredited        Outcome = "credited"         // the account was credited
	OutcomeAlreadyCredited Outcome = "already_credited" // another event credited this session
	OutcomeNotPaid         Outcome = "not_paid"         // completed, payment still pending
	OutcomePaymentFailed   Outcome = "payment_failed"   // async payment failed
	OutcomeExpired         Outcome = "expired"          // the session expired unpaid
	OutcomeUnknownAccount  Outcome = "unknown_account"  // the named account does not exist
	OutcomeRejected        Outcome = "rejected"         // no account, no amount or not SEK
	OutcomeDuplicateEvent  Outcome = "duplicate_event"  // this event was applied before (not stored)
	// Refusals of a signed event that must not move money.
	OutcomeUnknownSession  Outcome = "unknown_session"  // no checkout session the gateway created
	OutcomeAccountMismatch Outcome = "account_mismatch" // the session belongs to another account
	OutcomeAmountMismatch  Outcome = "amount_mismatch"  // another amount or currency than the session's
	OutcomeWrongMode       Outcome = "wrong_mode"       // livemode differs from the secret key's mode
	// Refunds and disputes.
	OutcomeRefunded         Outcome = "refunded"          // the refunded amount was debited
	OutcomeAlreadyRefunded  Outcome = "already_refunded"  // an earlier event debited this refund total
	OutcomeAccountSuspended Outcome = "account_suspended" // a dispute suspended the account
	OutcomeAlreadyDisputed  Outcome = "already_disputed"  // the dispute was recorded before
)

// Refused reports whether the outcome is a refusal of a signed event (logged at error
// level for the operator).
func (o Outcome) Refused() bool {
	switch o {
	case OutcomeUnknownAccount, OutcomeRejected, OutcomeUnknownSession, OutcomeAccountMismatch,
		OutcomeAmountMismatch, OutcomeWrongMode:
		return true
	}
	return false
}

// CheckoutEvent is the part of a checkout.session.* event the credit needs.
type CheckoutEvent struct {
	EventID   string
	Type      string
	Created   time.Time
	Livemode  bool
	SessionID string
	// PaymentIntentID names the payment; refunds and disputes find the session by it.
	PaymentIntentID string
	AccountID       string
	PaymentStatus   string
	AmountOre       int64
	Currency        string
	// Credit says whether the event pays (completed+paid, or async_payment_succeeded).
	Credit bool
	// Outcome, when set, is stored without crediting (not_paid, payment_failed, rejected).
	Outcome Outcome
}

// ApplyResult is the result of Apply.
type ApplyResult struct {
	Outcome         Outcome
	AmountMicroSEK  int64 // credited amount when Outcome is credited
	BalanceMicroSEK int64 // balance after the credit when Outcome is credited
	// Replayed counts earlier refund and dispute events of the payment applied with it.
	Replayed int
}

// Apply records the event and, when it pays, credits the account, all in one transaction.
// live is the mode of the configured secret key. A paying event credits only a checkout
// session the gateway created (checkout_sessions), in the key's mode, for the session's
// account, amount and currency; anything else is recorded with its refusal outcome and
// credits nothing. The event ID (payment_events) and the session ID (payment_credits) are
// each inserted with ON CONFLICT DO NOTHING before the ledger entry, so a repeated event, a
// second event for the same session and concurrent deliveries credit at most once.
// Concurrent transactions inserting the same key wait for the first to commit and then see
// the conflict.
func Apply(ctx context.Context, l Ledger, ev CheckoutEvent, live bool) (ApplyResult, error) {
	var res ApplyResult
	err := l.InPaymentTx(ctx, func(tx *store.PaymentTx) error {
		res = ApplyResult{}
		var replay Session
		if err := applyCheckout(ctx, tx, ev, live, &res, &replay); err != nil || replay.ID == "" {
			return err
		}
		// Refund and dispute events of this payment that came before it apply now.
		var err error
		res.Replayed, err = replayPending(ctx, tx, replay, ev.PaymentIntentID, live)
		return err
	})
	if err != nil {
		return ApplyResult{}, err
	}
	return res, nil
}

// applyCheckout is Apply's work inside its transaction. It sets *replay to the recorded
// session when the event is not refused and names its payment intent.
func applyCheckout(ctx context.Context, tx *store.PaymentTx, ev CheckoutEvent, live bool, res *ApplyResult, replay *Session) error {
	sess, found, err := tx.SessionByID(ctx, ev.SessionID)
	if err != nil {
		return err
	}
	outcome, micro := checkoutOutcome(ev, sess, found, live)
	if found && !outcome.Refused() && ev.PaymentIntentID != "" {
		if err := tx.SetPaymentIntent(ctx, ev.SessionID, ev.PaymentIntentID); err != nil {
			return err
		}
		*replay = sess
	}
	if found && outcome == OutcomeExpired && sess.Status == "open" {
		if err := tx.SetSessionStatus(ctx, ev.SessionID, "expired"); err != nil {
			return err
		}
	}
	inserted, err := tx.InsertCheckoutEvent(ctx, store.PaymentEvent{EventID: ev.EventID, Type: ev.Type,
		SessionID: ev.SessionID, AccountID: ev.AccountID, PaymentStatus: ev.PaymentStatus, AmountOre: ev.AmountOre,
		Currency: ev.Currency, Livemode: ev.Livemode, Outcome: string(outcome), Created: ev.Created})
	if err != nil {
		return err
	}
	if !inserted {
		res.Outcome = OutcomeDuplicateEvent
		return nil
	}
	res.Outcome = outcome
	if outcome != OutcomeCredited {
		return nil
	}
	return creditCheckout(ctx, tx, ev, micro, res)
}

// checkoutOutcome decides what a checkout event comes to against its session (found: the
// gateway created it), and the micro-SEK it credits when it is OutcomeCredited.
func checkoutOutcome(ev CheckoutEvent, sess Session, found, live bool) (Outcome, int64) {
	outcome := ev.Outcome
	switch {
	case ev.Livemode != live || (found && sess.Livemode != live):
		outcome = OutcomeWrongMode
	case !found:
		outcome = OutcomeUnknownSession
	case ev.AccountID != sess.AccountID:
		outcome = OutcomeAccountMismatch
	case ev.Credit && (ev.AmountOre != sess.AmountOre || ev.Currency != sess.Currency):
		outcome = OutcomeAmountMismatch
	}
	var micro int64
	if outcome == "" && ev.Credit {
		outcome = OutcomeCredited
		var err error
		if ev.AccountID == "" || ev.SessionID == "" || ev.AmountOre <= 0 || ev.Currency != "sek" {
			outcome = OutcomeRejected
		} else if micro, err = money.OreToMicro(ev.AmountOre); err != nil {
			outcome = OutcomeRejected
		}
	}
	if outcome == "" {
		outcome = OutcomeNotPaid
	}
	return outcome, micro
}

// creditCheckout credits a paid checkout once: its credit row, then the ledger, then the
// session complete.
func creditCheckout(ctx context.Context, tx *store.PaymentTx, ev CheckoutEvent, micro int64, res *ApplyResult) error {
	inserted, err := tx.InsertCredit(ctx, ev.SessionID, ev.AccountID, ev.EventID, ev.AmountOre, micro)
	if err != nil {
		return err
	}
	if !inserted {
		return markOutcome(ctx, tx, ev.EventID, OutcomeAlreadyCredited, res)
	}
	cr, err := tx.Credit(ctx, store.Credit{
		AccountID:      ev.AccountID,
		AmountMicroSEK: micro,
		Kind:           store.KindTopup,
		Reference:      ev.SessionID,
		Note:           "checkout " + ev.SessionID + " (event " + ev.EventID + ")",
	})
	if err != nil {
		return fmt.Errorf("credit %s for checkout %s: %w", ev.AccountID, ev.SessionID, err)
	}
	if !cr.Applied { // the ledger already had this checkout's credit (e.g. given by hand)
		return markOutcome(ctx, tx, ev.EventID, OutcomeAlreadyCredited, res)
	}
	if err := tx.SetSessionStatus(ctx, ev.SessionID, "complete"); err != nil {
		return err
	}
	res.AmountMicroSEK = micro
	res.BalanceMicroSEK = cr.BalanceMicroSEK
	return nil
}

func markOutcome(ctx context.Context, tx *store.PaymentTx, eventID string, o Outcome, res *ApplyResult) error {
	if err := tx.SetEventOutcome(ctx, eventID, string(o)); err != nil {
		return err
	}
	res.Outcome = o
	return nil
}

// errBadEvent marks a signed event whose content cannot be used.
var errBadEvent = errors.New("unusable event")
