package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sekgate/gateway/shared/apikey"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Key is an API key's public metadata; the secret is never stored.
type Key struct {
	ID        string
	AccountID string
	Name      string
	CreatedAt time.Time
	ExpiresAt *time.Time
	RevokedAt *time.Time
	Limits    *snapshot.Limits // nil: limited only through the account
}

// CreateKey issues a key for the account and returns it with its secret, which is shown
// once and stored only as a hash. expiresAt may be nil (no expiry).
func (s *Store) CreateKey(ctx context.Context, accountID, name string, expiresAt *time.Time) (Key, string, error) {
	for attempt := 0; ; attempt++ {
		id, secret, hash, err := apikey.New()
		if err != nil {
			return Key{}, "", err
		}
		k, err := scanKey(s.pool.QueryRow(ctx, `INSERT INTO api_keys (id, account_id, name, hash, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+keyColumns, id, accountID, name, hash, s.now(), expiresAt))
		if err != nil {
			err = translate(err, "create key for "+accountID)
			if attempt < 3 && isConflict(err) { // a 48-bit ID collision: draw again
				continue
			}
			return Key{}, "", err
		}
		return k, secret, nil
	}
}

const keyColumns = `id, account_id, name, created_at, expires_at, revoked_at, limits`

func scanKey(row pgx.Row) (Key, error) {
	var k Key
	var limits []byte
	if err := row.Scan(&k.ID, &k.AccountID, &k.Name, &k.CreatedAt, &k.ExpiresAt, &k.RevokedAt, &limits); err != nil {
		return k, err
	}
	var err error
	k.Limits, err = decodeLimits(limits)
	return k, err
}

// SetKeyLimits sets a key's own request limits; nil clears them (the key is then limited
// only through its account). Nodes get the change with the next snapshot.
func (s *Store) SetKeyLimits(ctx context.Context, id string, l *snapshot.Limits) (Key, error) {
	lj, err := limitsJSON(l)
	if err != nil {
		return Key{}, err
	}
	k, err := scanKey(s.pool.QueryRow(ctx, `UPDATE api_keys SET limits = $2::jsonb WHERE id = $1 RETURNING `+keyColumns, id, lj))
	return k, translate(err, "set limits of key "+id)
}

// ListKeys returns the account's keys, oldest first; ErrNotFound for an unknown account.
func (s *Store) ListKeys(ctx context.Context, accountID string) ([]Key, error) {
	if err := lockAccount(ctx, poolTx{s}, accountID); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE account_id = $1 ORDER BY created_at, id`, accountID)
	if err != nil {
		return nil, translate(err, "list keys")
	}
	defer rows.Close()
	out := []Key{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, translate(err, "list keys")
		}
		out = append(out, k)
	}
	return out, translate(rows.Err(), "list keys")
}

// GetKey returns one key.
func (s *Store) GetKey(ctx context.Context, id string) (Key, error) {
	k, err := scanKey(s.pool.QueryRow(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE id = $1`, id))
	return k, translate(err, "get key "+id)
}

// RevokeKey revokes a key (idempotent: a revoked key keeps its first revocation time).
func (s *Store) RevokeKey(ctx context.Context, id string) (Key, error) {
	k, err := scanKey(s.pool.QueryRow(ctx, `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2)
		WHERE id = $1 RETURNING `+keyColumns, id, s.now()))
	return k, translate(err, "revoke key "+id)
}

func isConflict(err error) bool { return errors.Is(err, ErrConflict) }

// poolTx adapts the pool to the small querier interface used by helpers.
type poolTx struct{ s *Store }

func (p poolTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return p.s.pool.QueryRow(ctx, sql, args...)
}
