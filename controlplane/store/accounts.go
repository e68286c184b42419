package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Account is a customer account with its balance and enabled models.
type Account struct {
	ID        string
	Customer  string
	Residency string
	Suspended bool
	// SuspensionReason is why the account is suspended (empty: none given, or not
	// suspended).
	SuspensionReason string
	Limits           *snapshot.Limits
	// QueueWeight is the account's weight in the nodes' fair queue (snapshot.Account),
	// 1..100.
	QueueWeight int
	CreatedAt   time.Time
	// BalanceMicroSEK is the sum of the account's ledger entries.
	BalanceMicroSEK int64
	// Models the account may use (canonical IDs, sorted).
	Models []string
}

// AccountPatch changes some fields of an account; nil fields stay as they are.
type AccountPatch struct {
	Residency *string
	Suspended *bool
	// SuspensionReason replaces the reason of a suspension. Lifting a suspension
	// (Suspended false) clears it.
	SuspensionReason *string
	// Limits replaces the account's limits; set ClearLimits to remove them.
	Limits      *snapshot.Limits
	ClearLimits bool
	// QueueWeight sets the account's fair-queue weight (1..100; else ErrInvalid).
	QueueWeight *int
}

// NewAccount is what CreateAccountWith creates.
type NewAccount struct {
	Customer  string
	Residency string
	// QueueWeight is the fair-queue weight (1..100); 0 means the default, 1.
	QueueWeight int
}

// NewAccountID returns a fresh acct_<16 hex> ID.
func NewAccountID() (string, error) { return randomID("acct_") }

// randomID returns prefix followed by 16 random hex digits (64 bits).
func randomID(prefix string) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("%sid: %w", prefix, err)
	}
	return prefix + hex.EncodeToString(b[:]), nil
}

const accountColumns = `a.id, a.customer, a.residency, a.suspended, a.suspension_reason, a.limits, a.queue_weight, a.created_at,
	COALESCE(b.balance_micro_sek, 0),
	COALESCE((SELECT array_agg(m.model_id ORDER BY m.model_id) FROM account_models m WHERE m.account_id = a.id), '{}')`

func scanAccount(row pgx.Row) (Account, error) {
	var a Account
	var limits []byte
	err := row.Scan(&a.ID, &a.Customer, &a.Residency, &a.Suspended, &a.SuspensionReason, &limits, &a.QueueWeight, &a.CreatedAt, &a.BalanceMicroSEK, &a.Models)
	if err != nil {
		return a, err
	}
	if len(limits) > 0 && string(limits) != "null" {
		a.Limits = new(snapshot.Limits)
		if err := json.Unmarshal(limits, a.Limits); err != nil {
			return a, fmt.Errorf("decode limits of %s: %w", a.ID, err)
		}
	}
	return a, nil
}

func limitsJSON(l *snapshot.Limits) ([]byte, error) {
	if l == nil {
		return nil, nil
	}
	return json.Marshal(l)
}

// CreateAccount creates an account with a zero balance and the default queue weight.
func (s *Store) CreateAccount(ctx context.Context, customer, residency string) (Account, error) {
	return s.CreateAccountWith(ctx, NewAccount{Customer: customer, Residency: residency})
}

// CreateAccountWith creates an account with a zero balance.
func (s *Store) CreateAccountWith(ctx context.Context, n NewAccount) (Account, error) {
	var id string
	err := s.InTx(ctx, func(tx pgx.Tx) (err error) {
		id, err = InsertAccount(ctx, tx, n.Customer, n.Residency, s.now())
		if err != nil || n.QueueWeight == 0 {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE accounts SET queue_weight = $2 WHERE id = $1`, id, n.QueueWeight)
		return err
	})
	if err != nil {
		return Account{}, translate(err, "create account")
	}
	return s.GetAccount(ctx, id)
}

// InsertAccount creates an account (with its zero balance row) inside the caller's
// transaction and returns its new ID; other packages' transactions (signup approval) use it.
func InsertAccount(ctx context.Context, tx pgx.Tx, customer, residency string, now time.Time) (string, error) {
	id, err := NewAccountID()
	if err != nil {
		return "", err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO accounts (id, customer, residency, created_at) VALUES ($1, $2, $3, $4)`,
		id, customer, residency, now); err != nil {
		return "", err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO account_balances (account_id) VALUES ($1)`, id); err != nil {
		return "", err
	}
	return id, nil
}

// GetAccount returns one account.
func (s *Store) GetAccount(ctx context.Context, id string) (Account, error) {
	a, err := scanAccount(s.pool.QueryRow(ctx, `SELECT `+accountColumns+`
		FROM accounts a LEFT JOIN account_balances b ON b.account_id = a.id WHERE a.id = $1`, id))
	return a, translate(err, "get account "+id)
}

// ListAccounts returns all accounts ordered by creation.
func (s *Store) ListAccounts(ctx context.Context) ([]Account, error) {
	return s.queryAccounts(ctx, "list accounts", `SELECT `+accountColumns+`
		FROM accounts a LEFT JOIN account_balances b ON b.account_id = a.id ORDER BY a.created_at, a.id`)
}

// queryAccounts runs a query selecting accountColumns and returns its accounts (an empty
// list for none); what names the query in errors.
func (s *Store) queryAccounts(ctx context.Context, what, query string, args ...any) ([]Account, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, translate(err, what)
	}
	defer rows.Close()
	out := []Account{}
	for rows.Next() {
		a, err := scanAccount(rows)
		if err != nil {
			return nil, translate(err, what)
		}
		out = append(out, a)
	}
	return out, translate(rows.Err(), what)
}

// UpdateAccount applies a patch and returns the account.
func (s *Store) UpdateAccount(ctx context.Context, id string, p AccountPatch) (Account, error) {
	lj, err := limitsJSON(p.Limits)
	if err != nil {
		return Account{}, err
	}
	tag, err := s.pool.Exec(ctx, `UPDATE accounts SET
			residency = COALESCE($2, residency),
			suspended = COALESCE($3, suspended),
			suspension_reason = CASE WHEN NOT COALESCE($3, suspended) THEN '' ELSE COALESCE($7, suspension_reason) END,
			limits = CASE WHEN $5 THEN NULL WHEN $4::jsonb IS NOT NULL THEN $4::jsonb ELSE limits END,
			queue_weight = COALESCE($6, queue_weight)
		WHERE id = $1`, id, p.Residency, p.Suspended, lj, p.ClearLimits, p.QueueWeight, p.SuspensionReason)
	if err != nil {
		return Account{}, translate(err, "update account "+id)
	}
	if tag.RowsAffected() == 0 {
		return Account{}, fmt.Errorf("update account %s: %w", id, ErrNotFound)
	}
	return s.GetAccount(ctx, id)
}

// EnableModels lets the account use the given models (canonical IDs or aliases). It
// returns the canonical IDs; an unknown name fails the whole call with ErrNotFound.
func (s *Store) EnableModels(ctx context.Context, accountID string, names []string) ([]string, error) {
	var ids []string
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		if err := lockAccount(ctx, tx, accountID); err != nil {
			return err
		}
		for _, n := range names {
			id, err := resolveModel(ctx, tx, n)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO account_models (account_id, model_id) VALUES ($1, $2)
				ON CONFLICT DO NOTHING`, accountID, id); err != nil {
				return translate(err, "enable model "+id)
			}
			ids = append(ids, id)
		}
		return nil
	})
	return ids, err
}

// DisableModel removes a model (canonical ID or alias) from the account.
func (s *Store) DisableModel(ctx context.Context, accountID, name string) error {
	return s.InTx(ctx, func(tx pgx.Tx) error {
		if err := lockAccount(ctx, tx, accountID); err != nil {
			return err
		}
		id, err := resolveModel(ctx, tx, name)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM account_models WHERE account_id = $1 AND model_id = $2`, accountID, id)
		if err != nil {
			return translate(err, "disable model "+id)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("model %s is not enabled for %s: %w", id, accountID, ErrNotFound)
		}
		return nil
	})
}

// lockAccount checks the account exists and, inside a transaction, keeps it from
// changing until the transaction ends.
func lockAccount(ctx context.Context, q querier, id string) error {
	var x string
	err := q.QueryRow(ctx, `SELECT id FROM accounts WHERE id = $1 FOR SHARE`, id).Scan(&x)
	return translate(err, "account "+id)
}

// resolveModel maps a canonical ID or alias to the canonical ID.
func resolveModel(ctx context.Context, q querier, name string) (string, error) {
	var id string
	err := q.QueryRow(ctx, `SELECT id FROM models WHERE id = $1
		UNION ALL SELECT model_id FROM model_aliases WHERE alias = $1 LIMIT 1`, name).Scan(&id)
	return id, translate(err, "model "+name)
}

// ResolveModel maps a canonical ID or alias to the canonical ID.
func (s *Store) ResolveModel(ctx context.Context, name string) (string, error) {
	return resolveModel(ctx, s.pool, name)
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
