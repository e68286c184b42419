package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/residency"
)

// Statuses of a signup (table signups, migration 003).
const (
	SignupPending  = "pending"
	SignupApproved = "approved"
	SignupRejected = "rejected"
)

// Errors of the signup review.
var (
	ErrSignupNotFound   = errors.New("signup not found")
	ErrSignupConflict   = errors.New("signup cannot make this transition")
	ErrInvalidResidency = errors.New("residency must be se, eu or any")
)

// SignupForm is what an access request stores; controlplane/signup validates it.
type SignupForm struct {
	Name, Email, Company, Residency, Volume, UseCase string
}

// Approval says what approving a signup does besides setting the status.
type Approval struct {
	// CreateAccount creates the account (customer = company, else name) unless the signup
	// already has one.
	CreateAccount bool
	// Residency of the new account; empty means the signup's own residency field when it
	// is a valid policy (se, eu, any), else ErrInvalidResidency.
	Residency string
}

// CreateSignup stores a pending request; a pending one with the same email (any case)
// makes it a no-op.
func (s *Store) CreateSignup(ctx context.Context, f SignupForm, clientAddr string) error {
	id, err := randomID("sgn_")
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO signups (id, name, email, company, residency, volume, use_case,
			client_addr, consented_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)
		ON CONFLICT (lower(email)) WHERE status = 'pending' DO NOTHING`,
		id, f.Name, f.Email, f.Company, f.Residency, f.Volume, f.UseCase, clientAddr, s.now())
	if err != nil {
		return fmt.Errorf("insert signup: %w", err)
	}
	return nil
}

const signupColumns = `id, name, email, company, residency, volume, use_case, client_addr, status,
	consented_at, created_at, decided_at, account_id`

func scanSignup(row pgx.Row) (adminapi.Signup, error) {
	var s adminapi.Signup
	err := row.Scan(&s.ID, &s.Name, &s.Email, &s.Company, &s.Residency, &s.Volume, &s.UseCase, &s.ClientAddr,
		&s.Status, &s.ConsentedAt, &s.CreatedAt, &s.DecidedAt, &s.AccountID)
	return s, err
}

// ListSignups returns signups newest first, those with the given status when status is
// not empty, at most limit.
func (s *Store) ListSignups(ctx context.Context, status string, limit int) ([]adminapi.Signup, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+signupColumns+` FROM signups
		WHERE $1 = '' OR status = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, status, limit)
	if err != nil {
		return nil, fmt.Errorf("list signups: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (adminapi.Signup, error) { return scanSignup(r) })
	if err != nil {
		return nil, fmt.Errorf("list signups: %w", err)
	}
	if out == nil {
		out = []adminapi.Signup{}
	}
	return out, nil
}

// GetSignup returns one signup.
func (s *Store) GetSignup(ctx context.Context, id string) (adminapi.Signup, error) {
	sg, err := scanSignup(s.pool.QueryRow(ctx, `SELECT `+signupColumns+` FROM signups WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return adminapi.Signup{}, fmt.Errorf("signup %s: %w", id, ErrSignupNotFound)
	}
	return sg, err
}

// lockSignup reads a signup for update inside tx.
func lockSignup(ctx context.Context, tx pgx.Tx, id string) (adminapi.Signup, error) {
	sg, err := scanSignup(tx.QueryRow(ctx, `SELECT `+signupColumns+` FROM signups WHERE id = $1 FOR UPDATE`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return sg, fmt.Errorf("signup %s: %w", id, ErrSignupNotFound)
	}
	if err != nil {
		return sg, fmt.Errorf("signup %s: %w", id, err)
	}
	return sg, nil
}

// ApproveSignup marks the signup approved (from pending or rejected; approving an approved
// one changes nothing) and, when asked, creates its account in the same transaction.
func (s *Store) ApproveSignup(ctx context.Context, id string, a Approval) (adminapi.Signup, error) {
	var out adminapi.Signup
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		sg, err := lockSignup(ctx, tx, id)
		if err != nil {
			return err
		}
		var accountID *string
		if a.CreateAccount && sg.AccountID == nil {
			res := a.Residency
			if res == "" && residency.Valid(sg.Residency) {
				res = sg.Residency
			}
			if !residency.Valid(res) {
				return fmt.Errorf("approve %s: %w (got %q)", id, ErrInvalidResidency, res)
			}
			customer := sg.Company
			if customer == "" {
				customer = sg.Name
			}
			acct, err := InsertAccount(ctx, tx, customer, res, s.now())
			if err != nil {
				return fmt.Errorf("create account for signup %s: %w", id, err)
			}
			accountID = &acct
		}
		if sg.Status == SignupApproved && accountID == nil {
			out = sg
			return nil
		}
		out, err = scanSignup(tx.QueryRow(ctx, `UPDATE signups SET status = 'approved',
				decided_at = CASE WHEN status = 'approved' THEN decided_at ELSE $2 END,
				account_id = COALESCE($3, account_id)
			WHERE id = $1 RETURNING `+signupColumns, id, s.now(), accountID))
		if err != nil {
			return fmt.Errorf("approve signup %s: %w", id, err)
		}
		return nil
	})
	return out, err
}

// RejectSignup marks a pending signup rejected; rejecting a rejected one changes nothing,
// an approved one is ErrSignupConflict.
func (s *Store) RejectSignup(ctx context.Context, id string) (adminapi.Signup, error) {
	var out adminapi.Signup
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		sg, err := lockSignup(ctx, tx, id)
		if err != nil {
			return err
		}
		switch sg.Status {
		case SignupRejected:
			out = sg
			return nil
		case SignupApproved:
			return fmt.Errorf("reject %s: already approved: %w", id, ErrSignupConflict)
		}
		out, err = scanSignup(tx.QueryRow(ctx, `UPDATE signups SET status = 'rejected', decided_at = $2
			WHERE id = $1 RETURNING `+signupColumns, id, s.now()))
		if err != nil {
			return fmt.Errorf("reject signup %s: %w", id, err)
		}
		return nil
	})
	return out, err
}
