package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/jackc/pgx/v5"
)

// Operator roles, weakest first.
const (
	RoleViewer   = "viewer"
	RoleOperator = "operator"
	RoleAdmin    = "admin"
)

// Operator is a named console and admin-API user.
type Operator struct {
	Name         string
	Role         string
	PasswordHash string // Argon2id PHC string (package password); "" for sign-in through OIDC only
	Email        string // lower case; "" when none (set for operators who sign in through OIDC)
	Disabled     bool
	CreatedAt    time.Time
}

// Session is a logged-in operator's session.
type Session struct {
	Operator  Operator
	CSRF      string // the session's form token
	Via       string // how it began: SessionPassword or SessionOIDC
	CreatedAt time.Time
	ExpiresAt time.Time
}

// How a session began.
const (
	SessionPassword = "password"
	SessionOIDC     = "oidc"
)

const operatorColumns = `name, role, password_hash, coalesce(email, ''), disabled, created_at`

func scanOperator(row pgx.Row) (Operator, error) {
	var o Operator
	err := row.Scan(&o.Name, &o.Role, &o.PasswordHash, &o.Email, &o.Disabled, &o.CreatedAt)
	o.CreatedAt = o.CreatedAt.UTC()
	return o, err
}

// CreateOperator adds an operator; ErrConflict when the name is taken, ErrInvalid for a
// name or role the schema refuses.
func (s *Store) CreateOperator(ctx context.Context, name, role, passwordHash string) (Operator, error) {
	return s.CreateOperatorWith(ctx, NewOperator{Name: name, Role: role, PasswordHash: passwordHash})
}

// NewOperator is an operator to add: a password hash, an email (lower case), or both.
type NewOperator struct {
	Name, Role, PasswordHash, Email string
}

// CreateOperatorWith adds an operator; ErrConflict when the name or email is taken,
// ErrInvalid for a name, role or email the schema refuses or for neither a password nor
// an email.
func (s *Store) CreateOperatorWith(ctx context.Context, n NewOperator) (Operator, error) {
	o, err := scanOperator(s.pool.QueryRow(ctx, `INSERT INTO operators (name, role, password_hash, email, created_at)
		VALUES ($1, $2, $3, nullif($4, ''), $5) RETURNING `+operatorColumns, n.Name, n.Role, n.PasswordHash, n.Email, s.now()))
	return o, translate(err, "create operator "+n.Name)
}

// GetOperatorByEmail returns the operator with this email (compared in lower case).
func (s *Store) GetOperatorByEmail(ctx context.Context, email string) (Operator, error) {
	o, err := scanOperator(s.pool.QueryRow(ctx, `SELECT `+operatorColumns+` FROM operators WHERE email = lower($1)`, email))
	return o, translate(err, "operator with email "+email)
}

// GetOperator returns an operator by name.
func (s *Store) GetOperator(ctx context.Context, name string) (Operator, error) {
	o, err := scanOperator(s.pool.QueryRow(ctx, `SELECT `+operatorColumns+` FROM operators WHERE name = $1`, name))
	return o, translate(err, "operator "+name)
}

// ListOperators returns every operator by name.
func (s *Store) ListOperators(ctx context.Context) ([]Operator, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+operatorColumns+` FROM operators ORDER BY name`)
	if err != nil {
		return nil, translate(err, "list operators")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Operator, error) { return scanOperator(r) })
	if out == nil {
		out = []Operator{}
	}
	return out, translate(err, "list operators")
}

// OperatorPatch changes an operator; nil fields are left as they are.
type OperatorPatch struct {
	Role         *string
	PasswordHash *string
	Disabled     *bool
	Email        *string // "" removes it
}

// UpdateOperator applies p. Disabling an operator or changing its password or role ends
// its sessions.
func (s *Store) UpdateOperator(ctx context.Context, name string, p OperatorPatch) (Operator, error) {
	var o Operator
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		o, err = scanOperator(tx.QueryRow(ctx, `UPDATE operators SET role = coalesce($2, role),
			password_hash = coalesce($3, password_hash), disabled = coalesce($4, disabled),
			email = CASE WHEN $5::text IS NULL THEN email ELSE nullif(lower($5), '') END
			WHERE name = $1 RETURNING `+operatorColumns, name, p.Role, p.PasswordHash, p.Disabled, p.Email))
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM operator_sessions WHERE operator = $1`, name)
		return err
	})
	return o, translate(err, "update operator "+name)
}

func randomHex() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// SessionTokenPrefix starts every session token, telling it apart from the admin token.
const SessionTokenPrefix = "ses_"

func tokenHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// CreateSession starts a password session of the operator lasting ttl and returns its
// token (shown once; only its hash is stored).
func (s *Store) CreateSession(ctx context.Context, operator string, ttl time.Duration) (string, Session, error) {
	return s.CreateSessionVia(ctx, operator, SessionPassword, ttl)
}

// CreateSessionVia is CreateSession for a session begun by via (SessionPassword or
// SessionOIDC).
func (s *Store) CreateSessionVia(ctx context.Context, operator, via string, ttl time.Duration) (string, Session, error) {
	raw, err := randomHex()
	if err != nil {
		return "", Session{}, err
	}
	csrf, err := randomHex()
	if err != nil {
		return "", Session{}, err
	}
	token := SessionTokenPrefix + raw
	now := s.now().UTC()
	sess := Session{CSRF: csrf, Via: via, CreatedAt: now, ExpiresAt: now.Add(ttl)}
	// Expired sessions are removed as new ones start: the table stays small.
	_, err = s.pool.Exec(ctx, `WITH gone AS (DELETE FROM operator_sessions WHERE expires_at < $5)
		INSERT INTO operator_sessions (token_hash, operator, csrf, created_at, expires_at, via) VALUES ($1, $2, $3, $4, $6, $7)`,
		tokenHash(token), operator, csrf, now, now, sess.ExpiresAt, via)
	if err != nil {
		return "", Session{}, translate(err, "create session of "+operator)
	}
	sess.Operator, err = s.GetOperator(ctx, operator)
	return token, sess, err
}

// LookupSession returns the live session of a token and its operator; ErrNotFound for an
// unknown or expired token and for a disabled operator.
func (s *Store) LookupSession(ctx context.Context, token string) (Session, error) {
	var sess Session
	var o Operator
	err := s.pool.QueryRow(ctx, `SELECT s.csrf, s.via, s.created_at, s.expires_at, o.name, o.role, o.password_hash,
			coalesce(o.email, ''), o.disabled, o.created_at
		FROM operator_sessions s JOIN operators o ON o.name = s.operator
		WHERE s.token_hash = $1 AND s.expires_at > $2 AND NOT o.disabled`, tokenHash(token), s.now()).
		Scan(&sess.CSRF, &sess.Via, &sess.CreatedAt, &sess.ExpiresAt, &o.Name, &o.Role, &o.PasswordHash, &o.Email, &o.Disabled, &o.CreatedAt)
	sess.Operator = o
	return sess, translate(err, "session")
}

// DeleteSession ends the session of a token (logout); an unknown token is not an error.
func (s *Store) DeleteSession(ctx context.Context, token string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM operator_sessions WHERE token_hash = $1`, tokenHash(token))
	return translate(err, "delete session")
}

// CountOperators returns how many operators exist (the first one is made with the admin
// token or gatewayctl).
func (s *Store) CountOperators(ctx context.Context) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM operators`).Scan(&n)
	return n, translate(err, "count operators")
}

// ValidRole reports whether r is a known operator role.
func ValidRole(r string) bool { return r == RoleViewer || r == RoleOperator || r == RoleAdmin }

// RoleAtLeast reports whether role has at least the rights of want.
func RoleAtLeast(role, want string) bool {
	rank := map[string]int{RoleViewer: 1, RoleOperator: 2, RoleAdmin: 3}
	return rank[role] > 0 && rank[role] >= rank[want]
}
