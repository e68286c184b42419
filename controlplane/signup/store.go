package signup

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/residency"
)

// Statuses of a signup.
const (
	StatusPending  = "pending"
	StatusApproved = "approved"
	StatusRejected = "rejected"
)

// Sentinel errors of the review operations.
var (
	ErrNotFound         = errors.New("signup not found")
	ErrConflict         = errors.New("signup cannot make this transition")
	ErrInvalidResidency = errors.New("residency must be se, eu or any")
)

// Signup is a stored access request; its wire shape is the admin API's.
type Signup = adminapi.Signup

// Approval says what approving does besides setting the status.
type Approval struct {
	// CreateAccount creates the account (customer = company, else name) unless the signup
	// already has one.
	CreateAccount bool
	// Residency of the new account; empty means the signup's own residency field when it
	// is a valid policy (se, eu, any), else ErrInvalidResidency.
	Residency string
}

// PGStore keeps signups in Postgres (table signups, migration 003).
type PGStore struct {
	pool *pgxpool.Pool
	now  func() time.Time
}

// NewPGStore returns a store on pool; now defaults to time.Now.
func NewPGStore(pool *pgxpool.Pool, now func() time.Time) *PGStore {
	if now == nil {
		now = time.Now
	}
	return &PGStore{pool: pool, now: now}
}

func newID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("signup id: %w", err)
	}
	return "sgn_" + hex.EncodeToString(b[:]), nil
}

// CreateSignup stores a pending request; a pending one with the same email (any case)
// makes it a no-op.
func (p *PGStore) CreateSignup(ctx context.Context, s Submission, clientAddr string) error {
	id, err := newID()
	if err != nil {
		return err
	}
	now := p.now()
	_, err = p.pool.Exec(ctx, `INSERT INTO signups (id, name, email, company, residency, volume, use_case,
			client_addr, consented_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)
		ON CONFLICT (lower(email)) WHERE status = 'pending' DO NOTHING`,
		id, s.Name, s.Email, s.Company, s.Residency, s.Volume, s.UseCase, clientAddr, now)
	if err != nil {
		return fmt.Errorf("insert signup: %w", err)
	}
	return nil
}

const signupColumns = `id, name, email, company, residency, volume, use_case, client_addr, status,
	consented_at, created_at, decided_at, account_id`

func scanSignup(row pgx.Row) (Signup, error) {
	var s Signup
	err := row.Scan(&s.ID, &s.Name, &s.Email, &s.Company, &s.Residency, &s.Volume, &s.UseCase, &s.ClientAddr,
		&s.Status, &s.ConsentedAt, &s.CreatedAt, &s.DecidedAt, &s.AccountID)
	return s, err
}

// ListSignups returns signups newest first, those with the given status when status is
// not empty, at most limit.
func (p *PGStore) ListSignups(ctx context.Context, status string, limit int) ([]Signup, error) {
	rows, err := p.pool.Query(ctx, `SELECT `+signupColumns+` FROM signups
		WHERE $1 = '' OR status = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, status, limit)
	if err != nil {
		return nil, fmt.Errorf("list signups: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Signup, error) { return scanSignup(r) })
	if err != nil {
		return nil, fmt.Errorf("list signups: %w", err)
	}
	if out == nil {
		out = []Signup{}
	}
	return out, nil
}

// GetSignup returns one signup.
func (p *PGStore) GetSignup(ctx context.Context, id string) (Signup, error) {
	s, err := scanSignup(p.pool.QueryRow(ctx, `SELECT `+signupColumns+` FROM signups WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Signup{}, fmt.Errorf("signup %s: %w", id, ErrNotFound)
	}
	return s, err
}

// ApproveSignup marks the signup approved (from pending or rejected; approving an approved
// one changes nothing) and, when asked, creates its account in the same transaction.
func (p *PGStore) ApproveSignup(ctx context.Context, id string, a Approval) (Signup, error) {
	var out Signup
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		s, err := scanSignup(tx.QueryRow(ctx, `SELECT `+signupColumns+` FROM signups WHERE id = $1 FOR UPDATE`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("signup %s: %w", id, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("signup %s: %w", id, err)
		}
		var accountID *string
		if a.CreateAccount && s.AccountID == nil {
			res := a.Residency
			if res == "" && residency.Valid(s.Residency) {
				res = s.Residency
			}
			if !residency.Valid(res) {
				return fmt.Errorf("approve %s: %w (got %q)", id, ErrInvalidResidency, res)
			}
			customer := s.Company
			if customer == "" {
				customer = s.Name
			}
			acct, err := store.InsertAccount(ctx, tx, customer, res, p.now())
			if err != nil {
				return fmt.Errorf("create account for signup %s: %w", id, err)
			}
			accountID = &acct
		}
		if s.Status == StatusApproved && accountID == nil {
			out = s
			return nil
		}
		out, err = scanSignup(tx.QueryRow(ctx, `UPDATE signups SET status = 'approved',
				decided_at = CASE WHEN status = 'approved' THEN decided_at ELSE $2 END,
				account_id = COALESCE($3, account_id)
			WHERE id = $1 RETURNING `+signupColumns, id, p.now(), accountID))
		if err != nil {
			return fmt.Errorf("approve signup %s: %w", id, err)
		}
		return nil
	})
	return out, err
}

// RejectSignup marks a pending signup rejected; rejecting a rejected one changes nothing,
// an approved one is ErrConflict.
func (p *PGStore) RejectSignup(ctx context.Context, id string) (Signup, error) {
	var out Signup
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		s, err := scanSignup(tx.QueryRow(ctx, `SELECT `+signupColumns+` FROM signups WHERE id = $1 FOR UPDATE`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("signup %s: %w", id, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("signup %s: %w", id, err)
		}
		switch s.Status {
		case StatusRejected:
			out = s
			return nil
		case StatusApproved:
			return fmt.Errorf("reject %s: already approved: %w", id, ErrConflict)
		}
		out, err = scanSignup(tx.QueryRow(ctx, `UPDATE signups SET status = 'rejected', decided_at = $2
			WHERE id = $1 RETURNING `+signupColumns, id, p.now()))
		if err != nil {
			return fmt.Errorf("reject signup %s: %w", id, err)
		}
		return nil
	})
	return out, err
}
