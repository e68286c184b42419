package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// OperatorTokenPrefix starts every operator API token's secret, telling it apart from the
// admin token and session tokens.
const OperatorTokenPrefix = "gwo_"

// OperatorToken is an operator's API token (never its secret, which is shown once).
type OperatorToken struct {
	ID         string // otk_ and 16 hex digits
	Operator   string
	Name       string
	Role       string // the most the token may do; its operator's role caps it on use
	CreatedBy  string // the actor that made it ("operator:<name>" or "token")
	CreatedAt  time.Time
	ExpiresAt  *time.Time
	RevokedAt  *time.Time
	RevokedBy  string
	LastUsedAt *time.Time
}

// Token states, as State reports them.
const (
	TokenActive  = "active"
	TokenExpired = "expired"
	TokenRevoked = "revoked"
)

// State is the token's state at now: revoked, expired or active.
func (t OperatorToken) State(now time.Time) string {
	switch {
	case t.RevokedAt != nil:
		return TokenRevoked
	case t.ExpiresAt != nil && !now.Before(*t.ExpiresAt):
		return TokenExpired
	}
	return TokenActive
}

// NewOperatorToken is a token to make for Operator.
type NewOperatorToken struct {
	Operator  string
	Name      string
	Role      string
	CreatedBy string
	ExpiresAt *time.Time // nil: never
}

const operatorTokenColumns = `id, operator, name, role, created_by, created_at, expires_at, revoked_at,
	coalesce(revoked_by, ''), last_used_at`

func scanOperatorToken(row pgx.Row, extra ...any) (OperatorToken, error) {
	var t OperatorToken
	err := row.Scan(append([]any{&t.ID, &t.Operator, &t.Name, &t.Role, &t.CreatedBy, &t.CreatedAt, &t.ExpiresAt,
		&t.RevokedAt, &t.RevokedBy, &t.LastUsedAt}, extra...)...)
	t.CreatedAt = t.CreatedAt.UTC()
	t.ExpiresAt, t.RevokedAt, t.LastUsedAt = utcPtr(t.ExpiresAt), utcPtr(t.RevokedAt), utcPtr(t.LastUsedAt)
	return t, err
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// CreateOperatorToken makes a token and returns its secret (shown once; only its hash is
// stored). The caller has checked the role against the creator's. ErrConflict when the
// operator has a live token of that name; ErrNotFound for an unknown operator; ErrInvalid
// for a name, role or expiry the schema refuses.
func (s *Store) CreateOperatorToken(ctx context.Context, n NewOperatorToken) (string, OperatorToken, error) {
	raw, err := randomHex()
	if err != nil {
		return "", OperatorToken{}, err
	}
	idb := make([]byte, 8)
	if _, err := rand.Read(idb); err != nil {
		return "", OperatorToken{}, err
	}
	secret := OperatorTokenPrefix + raw
	t, err := scanOperatorToken(s.pool.QueryRow(ctx, `INSERT INTO operator_tokens
		(id, operator, name, role, token_hash, created_by, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING `+operatorTokenColumns,
		"otk_"+hex.EncodeToString(idb), n.Operator, n.Name, n.Role, tokenHash(secret), n.CreatedBy, s.now(), n.ExpiresAt))
	if err != nil {
		return "", OperatorToken{}, translate(err, "create token "+n.Name+" of "+n.Operator)
	}
	return secret, t, nil
}

// LookupOperatorToken returns the token of a secret and its operator, whatever its state
// (the caller refuses a revoked or expired one, or a disabled operator, and can say which).
// A live token's last use is noted, at most once a minute. ErrNotFound for an unknown
// secret.
func (s *Store) LookupOperatorToken(ctx context.Context, secret string) (OperatorToken, Operator, error) {
	if !strings.HasPrefix(secret, OperatorTokenPrefix) {
		return OperatorToken{}, Operator{}, fmt.Errorf("operator token: %w", ErrNotFound)
	}
	now := s.now()
	var o Operator
	t, err := scanOperatorToken(s.pool.QueryRow(ctx, `WITH used AS (
			UPDATE operator_tokens SET last_used_at = $2 WHERE token_hash = $1 AND revoked_at IS NULL
				AND (expires_at IS NULL OR expires_at > $2) AND (last_used_at IS NULL OR last_used_at < $2 - interval '1 minute'))
		SELECT t.id, t.operator, t.name, t.role, t.created_by, t.created_at, t.expires_at, t.revoked_at,
			coalesce(t.revoked_by, ''), t.last_used_at, o.name, o.role, o.password_hash, coalesce(o.email, ''), o.disabled, o.created_at
		FROM operator_tokens t JOIN operators o ON o.name = t.operator WHERE t.token_hash = $1`, tokenHash(secret), now),
		&o.Name, &o.Role, &o.PasswordHash, &o.Email, &o.Disabled, &o.CreatedAt)
	return t, o, translate(err, "operator token")
}

// GetOperatorToken returns a token by ID.
func (s *Store) GetOperatorToken(ctx context.Context, id string) (OperatorToken, error) {
	t, err := scanOperatorToken(s.pool.QueryRow(ctx, `SELECT `+operatorTokenColumns+` FROM operator_tokens WHERE id = $1`, id))
	return t, translate(err, "operator token "+id)
}

// ListOperatorTokens returns the tokens of an operator ("": of every operator), newest
// first, at most 1000.
func (s *Store) ListOperatorTokens(ctx context.Context, operator string) ([]OperatorToken, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+operatorTokenColumns+` FROM operator_tokens
		WHERE $1 = '' OR operator = $1 ORDER BY created_at DESC, id LIMIT 1000`, operator)
	if err != nil {
		return nil, translate(err, "list operator tokens")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (OperatorToken, error) { return scanOperatorToken(r) })
	if out == nil {
		out = []OperatorToken{}
	}
	return out, translate(err, "list operator tokens")
}

// RevokeOperatorToken revokes a token for good; a token already revoked stays as it was
// (its first revocation counts). ErrNotFound for an unknown ID.
func (s *Store) RevokeOperatorToken(ctx context.Context, id, by string) (OperatorToken, error) {
	t, err := scanOperatorToken(s.pool.QueryRow(ctx, `UPDATE operator_tokens SET revoked_at = coalesce(revoked_at, $2),
		revoked_by = coalesce(revoked_by, $3) WHERE id = $1 RETURNING `+operatorTokenColumns, id, s.now(), by))
	return t, translate(err, "revoke operator token "+id)
}
