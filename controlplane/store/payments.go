package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The payment tables (checkout_sessions, payment_events, payment_credits, payment_refunds,
// payment_disputes). controlplane/payments decides what an event does; the statements it
// runs are these, inside one PaymentTx.

// CheckoutSession is a checkout session the gateway created.
type CheckoutSession struct {
	ID              string
	AccountID       string
	AmountOre       int64
	Currency        string
	Livemode        bool
	Status          string // open, complete, expired
	RequestID       string
	PaymentIntentID string
	Created         time.Time // the provider's creation time (zero when unknown)
}

// RecordCheckoutSession stores a session the top-up created. The same session again (a
// retried forward with the same idempotency key returns it) is not an error when it
// matches.
func (s *Store) RecordCheckoutSession(ctx context.Context, cs CheckoutSession) error {
	return s.InTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO checkout_sessions (id, account_id, amount_ore, currency, livemode, request_id, provider_created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`,
			cs.ID, cs.AccountID, cs.AmountOre, cs.Currency, cs.Livemode, cs.RequestID, nullTime(cs.Created))
		if err != nil {
			return fmt.Errorf("record checkout session %s: %w", cs.ID, err)
		}
		if tag.RowsAffected() == 1 {
			return nil
		}
		prev, _, err := (&PaymentTx{s: s, tx: tx}).SessionByID(ctx, cs.ID)
		if err != nil {
			return err
		}
		if prev.AccountID != cs.AccountID || prev.AmountOre != cs.AmountOre || prev.Currency != cs.Currency {
			return fmt.Errorf("checkout session %s is recorded for %s %d %s already", cs.ID, prev.AccountID, prev.AmountOre, prev.Currency)
		}
		return nil
	})
}

// PaymentTx runs the statements of one payment event inside one transaction.
type PaymentTx struct {
	s  *Store
	tx pgx.Tx
}

// InPaymentTx runs fn in a transaction, committing when it returns nil.
func (s *Store) InPaymentTx(ctx context.Context, fn func(p *PaymentTx) error) error {
	return s.InTx(ctx, func(tx pgx.Tx) error { return fn(&PaymentTx{s: s, tx: tx}) })
}

const sessionColumns = `id, account_id, amount_ore, currency, livemode, status, request_id, COALESCE(payment_intent_id, ''),
	COALESCE(provider_created_at, created_at)`

func scanSession(row pgx.Row) (CheckoutSession, bool, error) {
	var s CheckoutSession
	err := row.Scan(&s.ID, &s.AccountID, &s.AmountOre, &s.Currency, &s.Livemode, &s.Status, &s.RequestID, &s.PaymentIntentID, &s.Created)
	if errors.Is(err, pgx.ErrNoRows) {
		return CheckoutSession{}, false, nil
	}
	if err != nil {
		return CheckoutSession{}, false, fmt.Errorf("look up checkout session: %w", err)
	}
	return s, true, nil
}

// SessionByID locks and returns the session; found is false when the gateway did not
// create it.
func (p *PaymentTx) SessionByID(ctx context.Context, id string) (CheckoutSession, bool, error) {
	if id == "" {
		return CheckoutSession{}, false, nil
	}
	return scanSession(p.tx.QueryRow(ctx, `SELECT `+sessionColumns+` FROM checkout_sessions WHERE id = $1 FOR UPDATE`, id))
}

// SessionByPaymentIntent locks and returns the session a payment belongs to (recorded
// from its checkout events); found is false when none is known.
func (p *PaymentTx) SessionByPaymentIntent(ctx context.Context, pi string) (CheckoutSession, bool, error) {
	if pi == "" {
		return CheckoutSession{}, false, nil
	}
	return scanSession(p.tx.QueryRow(ctx, `SELECT `+sessionColumns+` FROM checkout_sessions
		WHERE payment_intent_id = $1 ORDER BY created_at LIMIT 1 FOR UPDATE`, pi))
}

// SetPaymentIntent records the payment of a session, once.
func (p *PaymentTx) SetPaymentIntent(ctx context.Context, sessionID, pi string) error {
	_, err := p.tx.Exec(ctx, `UPDATE checkout_sessions SET payment_intent_id = $2 WHERE id = $1 AND payment_intent_id IS NULL`, sessionID, pi)
	if err != nil {
		return fmt.Errorf("record payment intent of %s: %w", sessionID, err)
	}
	return nil
}

// SetSessionStatus sets a session's status (open, complete, expired).
func (p *PaymentTx) SetSessionStatus(ctx context.Context, sessionID, status string) error {
	if _, err := p.tx.Exec(ctx, `UPDATE checkout_sessions SET status = $2 WHERE id = $1`, sessionID, status); err != nil {
		return fmt.Errorf("update checkout session %s: %w", sessionID, err)
	}
	return nil
}

// PaymentEvent is a payment provider's event as payment_events records it. The charge
// fields (PaymentIntentID, ChargeID, DisputeID, Reason) are those of refund and dispute
// events.
type PaymentEvent struct {
	EventID, Type        string
	SessionID, AccountID string
	PaymentStatus        string
	AmountOre            int64
	Currency             string
	Livemode             bool
	Outcome              string
	Created              time.Time
	PaymentIntentID      string
	ChargeID, DisputeID  string
	Reason               string
}

// InsertCheckoutEvent records a checkout event; inserted is false when the event ID was
// recorded before.
func (p *PaymentTx) InsertCheckoutEvent(ctx context.Context, ev PaymentEvent) (inserted bool, err error) {
	tag, err := p.tx.Exec(ctx, `INSERT INTO payment_events (event_id, type, checkout_session_id, account_id,
			payment_status, amount_ore, currency, livemode, outcome, provider_created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (event_id) DO NOTHING`,
		ev.EventID, ev.Type, ev.SessionID, ev.AccountID, ev.PaymentStatus, ev.AmountOre, ev.Currency, ev.Livemode,
		ev.Outcome, nullTime(ev.Created))
	if err != nil {
		return false, fmt.Errorf("record payment event %s: %w", ev.EventID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// InsertChargeEvent records a refund or dispute event with what it needs to be applied
// later (PendingChargeEvents); inserted is false when the event ID was recorded before.
func (p *PaymentTx) InsertChargeEvent(ctx context.Context, ev PaymentEvent) (inserted bool, err error) {
	tag, err := p.tx.Exec(ctx, `INSERT INTO payment_events (event_id, type, checkout_session_id, account_id,
			payment_status, amount_ore, currency, livemode, outcome, provider_created_at,
			payment_intent_id, charge_id, dispute_id, reason)
		VALUES ($1, $2, $3, $4, '', $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (event_id) DO NOTHING`,
		ev.EventID, ev.Type, ev.SessionID, ev.AccountID, ev.AmountOre, ev.Currency, ev.Livemode, ev.Outcome, nullTime(ev.Created),
		ev.PaymentIntentID, ev.ChargeID, ev.DisputeID, ev.Reason)
	if err != nil {
		return false, fmt.Errorf("record payment event %s: %w", ev.EventID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// SetEventOutcome sets a recorded event's outcome.
func (p *PaymentTx) SetEventOutcome(ctx context.Context, eventID, outcome string) error {
	if _, err := p.tx.Exec(ctx, `UPDATE payment_events SET outcome = $2 WHERE event_id = $1`, eventID, outcome); err != nil {
		return fmt.Errorf("update payment event %s: %w", eventID, err)
	}
	return nil
}

// AttachEvent ties a recorded event to the session and account it turned out to concern.
func (p *PaymentTx) AttachEvent(ctx context.Context, eventID, sessionID, accountID string) error {
	if _, err := p.tx.Exec(ctx, `UPDATE payment_events SET checkout_session_id = $2, account_id = $3 WHERE event_id = $1`,
		eventID, sessionID, accountID); err != nil {
		return fmt.Errorf("update payment event %s: %w", eventID, err)
	}
	return nil
}

// PendingChargeEvents locks and returns, oldest first, the events of payment intent pi
// with the given outcome and one of the given types (AmountOre holds the refunded total
// or the disputed amount).
func (p *PaymentTx) PendingChargeEvents(ctx context.Context, pi, outcome string, types ...string) ([]PaymentEvent, error) {
	rows, err := p.tx.Query(ctx, `SELECT event_id, type, livemode, currency, amount_ore, charge_id, dispute_id, reason
		FROM payment_events WHERE payment_intent_id = $1 AND outcome = $2 AND type = ANY($3)
		ORDER BY received_at, event_id FOR UPDATE`, pi, outcome, types)
	if err != nil {
		return nil, fmt.Errorf("pending events of %s: %w", pi, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (PaymentEvent, error) {
		ev := PaymentEvent{PaymentIntentID: pi}
		err := r.Scan(&ev.EventID, &ev.Type, &ev.Livemode, &ev.Currency, &ev.AmountOre, &ev.ChargeID, &ev.DisputeID, &ev.Reason)
		return ev, err
	})
	if err != nil {
		return nil, fmt.Errorf("pending events of %s: %w", pi, err)
	}
	return out, nil
}

// InsertCredit records that the session's payment credits its account; inserted is false
// when the session was credited before.
func (p *PaymentTx) InsertCredit(ctx context.Context, sessionID, accountID, eventID string, amountOre, amountMicroSEK int64) (inserted bool, err error) {
	tag, err := p.tx.Exec(ctx, `INSERT INTO payment_credits (checkout_session_id, account_id, event_id, amount_ore, amount_micro_sek)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (checkout_session_id) DO NOTHING`,
		sessionID, accountID, eventID, amountOre, amountMicroSEK)
	if err != nil {
		return false, fmt.Errorf("record payment credit %s: %w", sessionID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// LockSessionRefunds locks a checkout session's row and returns the refunded total already
// debited across all of its charges, so refunds of the session's charges apply one at a
// time and together stay within the session's amount. Call it before LockRefund.
func (p *PaymentTx) LockSessionRefunds(ctx context.Context, sessionID string) (refundedOre int64, err error) {
	if _, err := p.tx.Exec(ctx, `SELECT 1 FROM checkout_sessions WHERE id = $1 FOR UPDATE`, sessionID); err != nil {
		return 0, fmt.Errorf("lock session %s: %w", sessionID, err)
	}
	if err := p.tx.QueryRow(ctx, `SELECT COALESCE(sum(refunded_ore), 0) FROM payment_refunds WHERE checkout_session_id = $1`,
		sessionID).Scan(&refundedOre); err != nil {
		return 0, fmt.Errorf("read refunds of session %s: %w", sessionID, err)
	}
	return refundedOre, nil
}

// LockRefund locks the refund record of a charge, creating it at zero, and returns the
// refunded total already debited.
func (p *PaymentTx) LockRefund(ctx context.Context, chargeID, sessionID, accountID string) (refundedOre int64, err error) {
	if _, err := p.tx.Exec(ctx, `INSERT INTO payment_refunds (charge_id, checkout_session_id, account_id, refunded_ore)
		VALUES ($1, $2, $3, 0) ON CONFLICT (charge_id) DO NOTHING`, chargeID, sessionID, accountID); err != nil {
		return 0, fmt.Errorf("record refund of %s: %w", chargeID, err)
	}
	if err := p.tx.QueryRow(ctx, `SELECT refunded_ore FROM payment_refunds WHERE charge_id = $1 FOR UPDATE`, chargeID).Scan(&refundedOre); err != nil {
		return 0, fmt.Errorf("read refund of %s: %w", chargeID, err)
	}
	return refundedOre, nil
}

// SetRefunded sets the refunded total debited for a charge.
func (p *PaymentTx) SetRefunded(ctx context.Context, chargeID string, totalOre int64) error {
	if _, err := p.tx.Exec(ctx, `UPDATE payment_refunds SET refunded_ore = $2, updated_at = now() WHERE charge_id = $1`, chargeID, totalOre); err != nil {
		return fmt.Errorf("update refund of %s: %w", chargeID, err)
	}
	return nil
}

// InsertDispute records a dispute of the session's payment; inserted is false when the
// dispute was recorded before.
func (p *PaymentTx) InsertDispute(ctx context.Context, ev PaymentEvent, sessionID, accountID string) (inserted bool, err error) {
	tag, err := p.tx.Exec(ctx, `INSERT INTO payment_disputes (dispute_id, charge_id, checkout_session_id, account_id, amount_ore, reason, event_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (dispute_id) DO NOTHING`,
		ev.DisputeID, ev.ChargeID, sessionID, accountID, ev.AmountOre, ev.Reason, ev.EventID)
	if err != nil {
		return false, fmt.Errorf("record dispute %s: %w", ev.DisputeID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// SuspendAccount suspends an account. The accounts trigger notifies the snapshot
// compiler: nodes refuse the account's keys with 403 account_suspended within seconds.
func (p *PaymentTx) SuspendAccount(ctx context.Context, accountID string) error {
	if _, err := p.tx.Exec(ctx, `UPDATE accounts SET suspended = true,
		suspension_reason = 'payment dispute' WHERE id = $1`, accountID); err != nil {
		return fmt.Errorf("suspend %s: %w", accountID, err)
	}
	return nil
}

// Credit adds a ledger credit inside the transaction (CreditTx).
func (p *PaymentTx) Credit(ctx context.Context, c Credit) (CreditResult, error) {
	return p.s.CreditTx(ctx, p.tx, c)
}

// Refund adds a refund's debit inside the transaction (RefundTx).
func (p *PaymentTx) Refund(ctx context.Context, c Credit) (CreditResult, error) {
	return p.s.RefundTx(ctx, p.tx, c)
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// SuspensionReason says why the account is suspended, for its holder: the most recent
// payment dispute when there is one (disputes suspend accounts), else the operator.
func (s *Store) SuspensionReason(ctx context.Context, accountID string) (string, error) {
	var at time.Time
	err := s.pool.QueryRow(ctx, `SELECT created_at FROM payment_disputes WHERE account_id = $1
		ORDER BY created_at DESC LIMIT 1`, accountID).Scan(&at)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "suspended by the operator; contact support to have it lifted", nil
	case err != nil:
		return "", fmt.Errorf("read disputes of %s: %w", accountID, err)
	}
	return "a payment was disputed on " + at.UTC().Format(time.DateOnly) +
		"; the account stays suspended until the operator lifts it after the dispute", nil
}
