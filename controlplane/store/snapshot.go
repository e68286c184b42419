package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sekgate/gateway/shared/snapshot"
)

// CompileSnapshot reads everything a data-plane node serves from in one consistent
// (repeatable read) transaction and versions it: the current version is kept when the
// content other than balances is unchanged, otherwise the version is bumped. The version
// table is locked before anything is read, so replicas compiling at once take turns: each
// reads what the one before it committed, and they agree on versions without a
// serialization failure. Slices are sorted by ID so that equal content hashes equally.
func (s *Store) CompileSnapshot(ctx context.Context, defaults snapshot.Limits) (*snapshot.Snapshot, error) {
	var snap *snapshot.Snapshot
	err := s.retryTx(ctx, func(tx pgx.Tx) error {
		var err error
		snap, err = s.compileTx(ctx, tx, defaults)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("compile snapshot: %w", err)
	}
	return snap, nil
}

func (s *Store) compileTx(ctx context.Context, tx pgx.Tx, defaults snapshot.Limits) (*snapshot.Snapshot, error) {
	// Repeatable read: every query below sees one snapshot of the database, taken at the
	// first query. The lock comes before it (LOCK TABLE takes no snapshot), so a compile
	// that waited for another one's lock sees what that one committed. Locking the row with
	// SELECT … FOR UPDATE instead would take the snapshot before the wait, and a compile
	// that waited for a replica's version bump would fail with a serialization error.
	// SHARE ROW EXCLUSIVE conflicts with itself and with the UPDATE below, not with readers.
	if _, err := tx.Exec(ctx, `SET TRANSACTION ISOLATION LEVEL REPEATABLE READ`); err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE snapshot_state IN SHARE ROW EXCLUSIVE MODE`); err != nil {
		return nil, err
	}
	snap := &snapshot.Snapshot{}
	var hash string
	if err := tx.QueryRow(ctx, `SELECT version, hash, generated_at FROM snapshot_state`).
		Scan(&snap.Version, &hash, &snap.GeneratedAt); err != nil {
		return nil, err
	}
	content, err := readContent(ctx, tx, defaults, s.now())
	if err != nil {
		return nil, err
	}
	snap.Content = *content
	snap.Hash, err = snapshot.ComputeHash(content)
	if err != nil {
		return nil, err
	}
	// Balances change with every request and reach nodes through usage replies and the
	// balance watch; they must not force full snapshots. The version (and the stored hash)
	// therefore follows everything but the balances: a snapshot carries the balances as of
	// its own BalanceSeq, and a node catches up from there with the balance watch.
	structHash, err := snapshot.StructureHash(content)
	if err != nil {
		return nil, err
	}
	if structHash != hash || snap.Version == 0 {
		snap.Version++
		snap.GeneratedAt = s.now().UTC().Truncate(time.Microsecond)
		if _, err := tx.Exec(ctx, `UPDATE snapshot_state SET version = $1, hash = $2, generated_at = $3`,
			snap.Version, structHash, snap.GeneratedAt); err != nil {
			return nil, err
		}
	}
	snap.GeneratedAt = snap.GeneratedAt.UTC()
	return snap, nil
}

// SnapshotState returns the stored version, the hash of its content without balances, and
// the generation time.
func (s *Store) SnapshotState(ctx context.Context) (version int64, hash string, generatedAt time.Time, err error) {
	err = s.pool.QueryRow(ctx, `SELECT version, hash, generated_at FROM snapshot_state`).Scan(&version, &hash, &generatedAt)
	return version, hash, generatedAt.UTC(), translate(err, "snapshot state")
}

func readContent(ctx context.Context, tx pgx.Tx, defaults snapshot.Limits, now time.Time) (*snapshot.Content, error) {
	c := &snapshot.Content{DefaultLimits: defaults}

	rows, err := tx.Query(ctx, `SELECT a.id, a.customer, a.residency, a.suspended, a.limits, a.queue_weight,
			COALESCE((SELECT array_agg(m.model_id ORDER BY m.model_id) FROM account_models m WHERE m.account_id = a.id), '{}'),
			a.budget_period, a.budget_micro_sek
		FROM accounts a ORDER BY a.id`)
	if err != nil {
		return nil, translate(err, "read accounts")
	}
	c.Accounts, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (snapshot.Account, error) {
		var a snapshot.Account
		var limits []byte
		var weight int
		var period *string
		var budget *int64
		if err := r.Scan(&a.ID, &a.Customer, &a.Residency, &a.Suspended, &limits, &weight, &a.Models, &period, &budget); err != nil {
			return a, err
		}
		a.Budget = budgetOf(period, budget)
		if weight != 1 { // 1, the default, stays out: a snapshot without weights hashes alike
			a.QueueWeight = weight
		}
		a.Limits, err = decodeLimits(limits)
		return a, err
	})
	if err != nil {
		return nil, translate(err, "read accounts")
	}

	if c.Keys, err = listKeys(ctx, tx); err != nil {
		return nil, err
	}
	if c.Revoked, err = listRevoked(ctx, tx); err != nil {
		return nil, err
	}
	if c.Models, err = listModels(ctx, tx); err != nil {
		return nil, err
	}
	if c.Routes, err = listRoutes(ctx, tx); err != nil {
		return nil, err
	}

	if err := tx.QueryRow(ctx, `SELECT seq FROM ledger_clock`).Scan(&c.BalanceSeq); err != nil {
		return nil, translate(err, "read ledger clock")
	}
	rows, err = tx.Query(ctx, `SELECT account_id, balance_micro_sek FROM account_balances ORDER BY account_id`)
	if err != nil {
		return nil, translate(err, "read balances")
	}
	c.Balances, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (snapshot.Balance, error) {
		var b snapshot.Balance
		err := r.Scan(&b.AccountID, &b.MicroSEK)
		return b, err
	})
	if err != nil {
		return nil, translate(err, "read balances")
	}
	if c.Spent, err = readSpent(ctx, tx, nil, now); err != nil {
		return nil, err
	}
	// Empty lists encode as [] rather than null, so the hash does not depend on it.
	if c.Accounts == nil {
		c.Accounts = []snapshot.Account{}
	}
	if c.Keys == nil {
		c.Keys = []snapshot.Key{}
	}
	if c.Models == nil {
		c.Models = []snapshot.Model{}
	}
	if c.Routes == nil {
		c.Routes = []snapshot.Route{}
	}
	if c.Balances == nil {
		c.Balances = []snapshot.Balance{}
	}
	return c, nil
}

func decodeLimits(b []byte) (*snapshot.Limits, error) {
	if len(b) == 0 || string(b) == "null" {
		return nil, nil
	}
	l := new(snapshot.Limits)
	if err := json.Unmarshal(b, l); err != nil {
		return nil, fmt.Errorf("decode limits: %w", err)
	}
	return l, nil
}

func sortRoutes(rs []snapshot.Route) {
	slices.SortFunc(rs, func(a, b snapshot.Route) int {
		return cmp.Or(cmp.Compare(a.Priority, b.Priority), cmp.Compare(a.ID, b.ID))
	})
}

// listRevoked reads the snapshot.MaxRevoked most recently revoked keys, ordered by ID: only
// their IDs, hash prefixes and revocation times.
func listRevoked(ctx context.Context, tx pgx.Tx) ([]snapshot.RevokedKey, error) {
	rows, err := tx.Query(ctx, `SELECT id, left(hash, 8), revoked_at FROM (
		SELECT id, hash, revoked_at FROM api_keys WHERE revoked_at IS NOT NULL
		ORDER BY revoked_at DESC, id LIMIT $1) r ORDER BY id`, snapshot.MaxRevoked)
	if err != nil {
		return nil, translate(err, "read revoked keys")
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (snapshot.RevokedKey, error) {
		var k snapshot.RevokedKey
		err := r.Scan(&k.ID, &k.HashPrefix, &k.RevokedAt)
		k.RevokedAt = k.RevokedAt.UTC()
		return k, err
	})
	if err != nil {
		return nil, translate(err, "read revoked keys")
	}
	return list, nil
}

// listKeys reads the live (unrevoked) keys, ordered by ID.
func listKeys(ctx context.Context, tx pgx.Tx) ([]snapshot.Key, error) {
	rows, err := tx.Query(ctx, `SELECT id, account_id, hash, expires_at, limits, budget_period, budget_micro_sek
		FROM api_keys WHERE revoked_at IS NULL ORDER BY id`)
	if err != nil {
		return nil, translate(err, "read keys")
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (snapshot.Key, error) {
		var k snapshot.Key
		var limits []byte
		var period *string
		var budget *int64
		if err := r.Scan(&k.ID, &k.AccountID, &k.Hash, &k.ExpiresAt, &limits, &period, &budget); err != nil {
			return k, err
		}
		k.Budget = budgetOf(period, budget)
		if k.ExpiresAt != nil {
			t := k.ExpiresAt.UTC()
			k.ExpiresAt = &t
		}
		k.Limits, err = decodeLimits(limits)
		return k, err
	})
	if err != nil {
		return nil, translate(err, "read keys")
	}
	return keys, nil
}
