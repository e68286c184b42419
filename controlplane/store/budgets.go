package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

// BudgetStatus is an account's or a key's budget and what it spent in the budget's current
// period.
type BudgetStatus struct {
	AccountID string
	KeyID     string // empty: the account's own budget
	KeyName   string
	Budget    snapshot.Budget
	// From and Until bound the current period (Until: when the budget resets).
	From, Until time.Time
	// SpentMicroSEK is the spend of records stored so far in the period.
	SpentMicroSEK int64
}

// Budgets lists the account's budget (if it has one) first, then those of its keys that
// have one (revoked keys left out), each with its spend in the current period; ErrNotFound
// for an unknown account.
func (s *Store) Budgets(ctx context.Context, accountID string) ([]BudgetStatus, error) {
	if err := lockAccount(ctx, poolTx{s}, accountID); err != nil {
		return nil, err
	}
	now := s.now()
	spent, err := readSpent(ctx, s.pool, []string{accountID}, now)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT a.id, '', '', a.budget_period, a.budget_micro_sek
			FROM accounts a WHERE a.id = $1 AND a.budget_period IS NOT NULL
		UNION ALL
		SELECT k.account_id, k.id, k.name, k.budget_period, k.budget_micro_sek
			FROM api_keys k WHERE k.account_id = $1 AND k.budget_period IS NOT NULL AND k.revoked_at IS NULL
		ORDER BY 2`, accountID)
	if err != nil {
		return nil, translate(err, "budgets of "+accountID)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (BudgetStatus, error) {
		var b BudgetStatus
		err := r.Scan(&b.AccountID, &b.KeyID, &b.KeyName, &b.Budget.Period, &b.Budget.LimitMicroSEK)
		b.From, b.Until = snapshot.PeriodStart(b.Budget.Period, now), snapshot.PeriodEnd(b.Budget.Period, now)
		for _, x := range spent {
			if x.KeyID == b.KeyID {
				b.SpentMicroSEK = x.MicroSEK
			}
		}
		return b, err
	})
	return out, translate(err, "budgets of "+accountID)
}

// SetAccountBudget sets (b non-nil) or clears (nil) the account's budget and returns the
// one it had before (nil: none). Nodes get the change with the next snapshot.
func (s *Store) SetAccountBudget(ctx context.Context, id string, b *snapshot.Budget) (*snapshot.Budget, error) {
	return s.setBudget(ctx, "accounts", id, b)
}

// SetKeyBudget sets (b non-nil) or clears (nil) a key's budget and returns the one it had
// before (nil: none).
func (s *Store) SetKeyBudget(ctx context.Context, id string, b *snapshot.Budget) (*snapshot.Budget, error) {
	return s.setBudget(ctx, "api_keys", id, b)
}

func (s *Store) setBudget(ctx context.Context, table, id string, b *snapshot.Budget) (*snapshot.Budget, error) {
	var period *string
	var limit *int64
	if b != nil {
		if err := b.Validate(); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		period, limit = &b.Period, &b.LimitMicroSEK
	}
	var oldPeriod *string
	var oldLimit *int64
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		// table is one of two constants above, never input.
		if err := tx.QueryRow(ctx, `SELECT budget_period, budget_micro_sek FROM `+table+` WHERE id = $1 FOR UPDATE`, id).
			Scan(&oldPeriod, &oldLimit); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE `+table+` SET budget_period = $2, budget_micro_sek = $3 WHERE id = $1`, id, period, limit)
		return err
	})
	if err != nil {
		return nil, translate(err, "set budget of "+id)
	}
	if oldPeriod == nil || oldLimit == nil {
		return nil, nil
	}
	return &snapshot.Budget{Period: *oldPeriod, LimitMicroSEK: *oldLimit}, nil
}

// readSpent returns, for the given accounts (nil: every account), the spend in the
// current period (at now) of each of them and of each of their unrevoked keys that has a
// budget, ordered by account and key. Spend is the sum of the records stored in the
// period's days (usage_daily, key_usage_daily), so it moves with the ledger's debits in
// the same transactions.
func readSpent(ctx context.Context, q rowsQuerier, accounts []string, now time.Time) ([]snapshot.Spent, error) {
	rows, err := q.Query(ctx, `WITH capped AS (
			SELECT a.id AS account_id, ''::text AS key_id,
				date_trunc(a.budget_period, $2::timestamptz AT TIME ZONE 'UTC')::date AS since
			FROM accounts a WHERE a.budget_period IS NOT NULL AND ($1::text[] IS NULL OR a.id = ANY ($1))
			UNION ALL
			SELECT k.account_id, k.id, date_trunc(k.budget_period, $2::timestamptz AT TIME ZONE 'UTC')::date
			FROM api_keys k WHERE k.budget_period IS NOT NULL AND k.revoked_at IS NULL
				AND ($1::text[] IS NULL OR k.account_id = ANY ($1)))
		SELECT c.account_id, c.key_id, c.since,
			CASE WHEN c.key_id = '' THEN
				(SELECT COALESCE(sum(u.price_micro_sek), 0)::bigint FROM usage_daily u
					WHERE u.account_id = c.account_id AND u.day >= c.since)
			ELSE
				(SELECT COALESCE(sum(u.price_micro_sek), 0)::bigint FROM key_usage_daily u
					WHERE u.key_id = c.key_id AND u.day >= c.since)
			END
		FROM capped c ORDER BY c.account_id, c.key_id`, accounts, now)
	if err != nil {
		return nil, translate(err, "read budget spend")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (snapshot.Spent, error) {
		var x snapshot.Spent
		var since time.Time
		err := r.Scan(&x.AccountID, &x.KeyID, &since, &x.MicroSEK)
		x.From = time.Date(since.Year(), since.Month(), since.Day(), 0, 0, 0, 0, time.UTC)
		return x, err
	})
	return out, translate(err, "read budget spend")
}

// addKeyDailyUsage adds the new records that name a key to key_usage_daily, one upsert
// row per (key, day), in that order, so concurrent batches cannot deadlock.
func addKeyDailyUsage(ctx context.Context, tx pgx.Tx, fresh []*usage.Record) error {
	type keyDay struct{ key, day string }
	type sums struct {
		account         string
		requests, price int64
	}
	days := map[keyDay]*sums{}
	for _, r := range fresh {
		if r.KeyID == nil || *r.KeyID == "" {
			continue
		}
		k := keyDay{*r.KeyID, r.TS.UTC().Format(time.DateOnly)}
		u := days[k]
		if u == nil {
			u = &sums{account: r.AccountID}
			days[k] = u
		}
		if !addChecked(&u.requests, 1) || !addChecked(&u.price, r.PriceMicroSEK) {
			return fmt.Errorf("daily usage of key %s overflows", k.key)
		}
	}
	if len(days) == 0 {
		return nil
	}
	keys := make([]keyDay, 0, len(days))
	for k := range days {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b keyDay) int {
		if a.key != b.key {
			return strings.Compare(a.key, b.key)
		}
		return strings.Compare(a.day, b.day)
	})
	n := len(keys)
	ids, dates, accts := make([]string, n), make([]string, n), make([]string, n)
	reqs, price := make([]int64, n), make([]int64, n)
	for i, k := range keys {
		u := days[k]
		ids[i], dates[i], accts[i], reqs[i], price[i] = k.key, k.day, u.account, u.requests, u.price
	}
	if _, err := tx.Exec(ctx, `INSERT INTO key_usage_daily AS u (key_id, day, account_id, requests, price_micro_sek)
		SELECT k.key_id, k.day::date, k.account_id, k.requests, k.price
		FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[]) AS k(key_id, day, account_id, requests, price)
		ORDER BY k.key_id, k.day
		ON CONFLICT (key_id, day) DO UPDATE SET requests = u.requests + EXCLUDED.requests,
			price_micro_sek = u.price_micro_sek + EXCLUDED.price_micro_sek`, ids, dates, accts, reqs, price); err != nil {
		return fmt.Errorf("add key daily usage: %w", err)
	}
	return nil
}

// rowsQuerier is what readSpent reads through: a transaction or the pool.
type rowsQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// budgetOf is the budget of a row's budget columns (nil when it has none).
func budgetOf(period *string, limit *int64) *snapshot.Budget {
	if period == nil || limit == nil {
		return nil
	}
	return &snapshot.Budget{Period: *period, LimitMicroSEK: *limit}
}

// replySpent is the budget spend of the accounts whose balances a usage reply carries
// (and of their keys), read after the balances in the batch's transaction.
func replySpent(ctx context.Context, tx pgx.Tx, bals []snapshot.Balance, now time.Time) ([]snapshot.Spent, error) {
	if len(bals) == 0 {
		return nil, nil
	}
	ids := make([]string, len(bals))
	for i, b := range bals {
		ids[i] = b.AccountID
	}
	spent, err := readSpent(ctx, tx, ids, now)
	if len(spent) == 0 {
		spent = nil
	}
	return spent, err
}

// BalanceChangesIn is BalancesSinceIn as the answer to a balance watch: with the budget
// spend of the listed accounts and their keys, read in the same transaction.
func (s *Store) BalanceChangesIn(ctx context.Context, since int64, country string) (usage.BalanceUpdate, error) {
	upd := usage.BalanceUpdate{Balances: []snapshot.Balance{}}
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		upd.Seq, upd.Balances, err = balancesSinceTx(ctx, tx, since, country)
		if err != nil || len(upd.Balances) == 0 {
			return err
		}
		upd.Spent, err = replySpent(ctx, tx, upd.Balances, s.now())
		return err
	})
	return upd, translate(err, "balances since")
}
