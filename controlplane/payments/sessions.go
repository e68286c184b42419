package payments

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// KeyLivemode returns the mode of a secret or restricted API key: true for sk_live_ and
// rk_live_, false for sk_test_ and rk_test_. Any other key is an error, so a mistyped key
// never decides which events are accepted.
func KeyLivemode(key string) (bool, error) {
	switch {
	case key == "":
		return false, errors.New("the payment secret key is required (its mode decides which events are accepted)")
	case strings.HasPrefix(key, "sk_live_"), strings.HasPrefix(key, "rk_live_"):
		return true, nil
	case strings.HasPrefix(key, "sk_test_"), strings.HasPrefix(key, "rk_test_"):
		return false, nil
	}
	return false, errors.New("the payment secret key must start with sk_live_, sk_test_, rk_live_ or rk_test_")
}

// Tx is what recording a checkout session needs from the store. *store.Store implements it.
type Tx interface {
	InTx(ctx context.Context, fn func(tx pgx.Tx) error) error
}

// Session is a checkout session the gateway created.
type Session struct {
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

// recordSession stores a session the top-up created. The same session again (a retried
// forward with the same idempotency key returns it) is not an error when it matches.
func recordSession(ctx context.Context, db Tx, s Session) error {
	var created *time.Time
	if !s.Created.IsZero() {
		created = &s.Created
	}
	return db.InTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO checkout_sessions (id, account_id, amount_ore, currency, livemode, request_id, provider_created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`,
			s.ID, s.AccountID, s.AmountOre, s.Currency, s.Livemode, s.RequestID, created)
		if err != nil {
			return fmt.Errorf("record checkout session %s: %w", s.ID, err)
		}
		if tag.RowsAffected() == 1 {
			return nil
		}
		prev, _, err := sessionByID(ctx, tx, s.ID)
		if err != nil {
			return err
		}
		if prev.AccountID != s.AccountID || prev.AmountOre != s.AmountOre || prev.Currency != s.Currency {
			return fmt.Errorf("checkout session %s is recorded for %s %d %s already", s.ID, prev.AccountID, prev.AmountOre, prev.Currency)
		}
		return nil
	})
}

const sessionColumns = `id, account_id, amount_ore, currency, livemode, status, request_id, COALESCE(payment_intent_id, ''),
	COALESCE(provider_created_at, created_at)`

func scanSession(row pgx.Row) (Session, bool, error) {
	var s Session
	err := row.Scan(&s.ID, &s.AccountID, &s.AmountOre, &s.Currency, &s.Livemode, &s.Status, &s.RequestID, &s.PaymentIntentID, &s.Created)
	if errors.Is(err, pgx.ErrNoRows) {
		return Session{}, false, nil
	}
	if err != nil {
		return Session{}, false, fmt.Errorf("look up checkout session: %w", err)
	}
	return s, true, nil
}

// sessionByID locks and returns the session; found is false when the gateway did not
// create it.
func sessionByID(ctx context.Context, tx pgx.Tx, id string) (Session, bool, error) {
	if id == "" {
		return Session{}, false, nil
	}
	return scanSession(tx.QueryRow(ctx, `SELECT `+sessionColumns+` FROM checkout_sessions WHERE id = $1 FOR UPDATE`, id))
}

// sessionByPaymentIntent returns the session a payment belongs to (recorded from its
// checkout events); found is false when none is known.
func sessionByPaymentIntent(ctx context.Context, tx pgx.Tx, pi string) (Session, bool, error) {
	if pi == "" {
		return Session{}, false, nil
	}
	return scanSession(tx.QueryRow(ctx, `SELECT `+sessionColumns+` FROM checkout_sessions
		WHERE payment_intent_id = $1 ORDER BY created_at LIMIT 1 FOR UPDATE`, pi))
}

func setPaymentIntent(ctx context.Context, tx pgx.Tx, sessionID, pi string) error {
	_, err := tx.Exec(ctx, `UPDATE checkout_sessions SET payment_intent_id = $2 WHERE id = $1 AND payment_intent_id IS NULL`, sessionID, pi)
	if err != nil {
		return fmt.Errorf("record payment intent of %s: %w", sessionID, err)
	}
	return nil
}

func setSessionStatus(ctx context.Context, tx pgx.Tx, sessionID, status string) error {
	if _, err := tx.Exec(ctx, `UPDATE checkout_sessions SET status = $2 WHERE id = $1`, sessionID, status); err != nil {
		return fmt.Errorf("update checkout session %s: %w", sessionID, err)
	}
	return nil
}
