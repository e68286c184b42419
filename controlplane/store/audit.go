package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// AuditEntry is one change attempted through the admin API. The audit_log table is
// append-only (migration 012): the runtime role can add and read entries, never change or
// remove them.
type AuditEntry struct {
	ID     int64
	At     time.Time
	Actor  string // "operator:<name>" or "token" (the static admin token)
	Role   string
	Action string // method and route pattern, e.g. "POST /admin/v1/accounts/{id}/credits"
	Target string // the resource changed, e.g. an account or key ID
	Status int    // the HTTP status answered
	// Credential is what authenticated the change: CredentialAdminToken,
	// CredentialSession, CredentialOIDCSession or CredentialOperatorToken (TokenID and
	// TokenName name the token); "" for entries from before credentials were recorded and
	// for failed authentications.
	Credential, TokenID, TokenName string
	// Request, Before and After are JSON (nil: none): the body sent (secrets removed), the
	// target as it was before, and the answer.
	Request, Before, After json.RawMessage
}

// Credentials of audit entries.
const (
	CredentialAdminToken    = "admin_token"
	CredentialSession       = "session"
	CredentialOIDCSession   = "oidc_session"
	CredentialOperatorToken = "operator_token"
)

// AppendAudit adds an entry and returns its ID.
func (s *Store) AppendAudit(ctx context.Context, e AuditEntry) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, `INSERT INTO audit_log (at, actor, role, action, target, status, request, before, after,
			credential, token_id, token_name)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`,
		s.now(), e.Actor, e.Role, e.Action, e.Target, e.Status, jsonOrNil(e.Request), jsonOrNil(e.Before), jsonOrNil(e.After),
		e.Credential, e.TokenID, e.TokenName).Scan(&id)
	return id, translate(err, "append audit entry")
}

func jsonOrNil(b json.RawMessage) any {
	if len(b) == 0 || !json.Valid(b) {
		return nil
	}
	return string(b)
}

// AuditQuery selects audit entries, newest first.
type AuditQuery struct {
	Target string // only entries about this resource (empty: all)
	Actor  string // only entries by this actor (empty: all)
	Before int64  // only entries with a smaller ID (0: from the newest)
	Limit  int    // 1..1000
}

// ListAudit returns a page of the audit log (keyset pagination on the ID).
func (s *Store) ListAudit(ctx context.Context, q AuditQuery) ([]AuditEntry, error) {
	if q.Limit <= 0 || q.Limit > 1000 {
		return nil, fmt.Errorf("list audit: limit %d: %w", q.Limit, ErrInvalid)
	}
	rows, err := s.pool.Query(ctx, `SELECT id, at, actor, role, action, target, status, request, before, after,
			credential, token_id, token_name FROM audit_log
		WHERE ($1 = '' OR target = $1) AND ($2 = '' OR actor = $2) AND ($3 = 0 OR id < $3)
		ORDER BY id DESC LIMIT $4`, q.Target, q.Actor, q.Before, q.Limit)
	if err != nil {
		return nil, translate(err, "list audit")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (AuditEntry, error) {
		var e AuditEntry
		var req, before, after []byte
		err := r.Scan(&e.ID, &e.At, &e.Actor, &e.Role, &e.Action, &e.Target, &e.Status, &req, &before, &after,
			&e.Credential, &e.TokenID, &e.TokenName)
		e.At = e.At.UTC()
		e.Request, e.Before, e.After = req, before, after
		return e, err
	})
	if out == nil {
		out = []AuditEntry{}
	}
	return out, translate(err, "list audit")
}
