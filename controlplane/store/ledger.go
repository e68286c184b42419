package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sekgate/gateway/shared/residency"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Ledger entry kinds.
const (
	KindCredit = "credit" // operator credit
	KindDebit  = "debit"  // usage: an account's new records of one batch; no reference (the records are the proof; older entries name one request each)
	KindTopup  = "topup"  // customer payment
	KindRefund = "refund" // payment refunded to the customer; negative, may take the balance below zero
)

// Credit is a positive ledger entry to append.
type Credit struct {
	AccountID string
	// AmountMicroSEK must be positive.
	AmountMicroSEK int64
	// Kind is KindCredit or KindTopup.
	Kind string
	// Reference, when not empty, makes the credit idempotent: a second credit with the
	// same reference is not applied (see CreditTx).
	Reference string
	Note      string
}

// Entry is a ledger entry.
type Entry struct {
	ID             int64
	AccountID      string
	AmountMicroSEK int64
	Kind           string
	Reference      string
	Note           string
	CreatedAt      time.Time
}

// CreditResult is the outcome of a credit.
type CreditResult struct {
	Entry Entry
	// Applied is false when an entry with the same reference already existed; Entry is
	// then that earlier entry.
	Applied bool
	// BalanceMicroSEK is the account's balance after the credit.
	BalanceMicroSEK int64
	// Seq is the ledger clock after the credit.
	Seq int64
}

// AddCredit appends a credit in its own transaction.
func (s *Store) AddCredit(ctx context.Context, c Credit) (CreditResult, error) {
	var res CreditResult
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		res, err = s.CreditTx(ctx, tx, c)
		return err
	})
	return res, err
}

// CreditTx appends a credit inside the caller's transaction, which lets a payment handler
// record its own rows and the credit atomically. A credit whose reference exists already
// is not applied again: the result carries the earlier entry and Applied=false (ErrConflict
// if that entry differs in account or amount). Call it last in the transaction: the
// ledger insert takes the ledger clock lock, which is held until commit.
func (s *Store) CreditTx(ctx context.Context, tx pgx.Tx, c Credit) (CreditResult, error) {
	if c.AmountMicroSEK <= 0 {
		return CreditResult{}, fmt.Errorf("credit %s: amount must be positive: %w", c.AccountID, ErrInvalid)
	}
	if c.Kind != KindCredit && c.Kind != KindTopup {
		return CreditResult{}, fmt.Errorf("credit %s: kind %q: %w", c.AccountID, c.Kind, ErrInvalid)
	}
	return s.appendTx(ctx, tx, c)
}

// RefundTx appends a refund (kind refund, c.AmountMicroSEK negative) inside the caller's
// transaction, with the same reference rules as CreditTx. The balance may go below zero.
func (s *Store) RefundTx(ctx context.Context, tx pgx.Tx, c Credit) (CreditResult, error) {
	if c.AmountMicroSEK >= 0 {
		return CreditResult{}, fmt.Errorf("refund %s: amount must be negative: %w", c.AccountID, ErrInvalid)
	}
	if c.Reference == "" {
		return CreditResult{}, fmt.Errorf("refund %s: a reference is required: %w", c.AccountID, ErrInvalid)
	}
	c.Kind = KindRefund
	return s.appendTx(ctx, tx, c)
}

func (s *Store) appendTx(ctx context.Context, tx pgx.Tx, c Credit) (CreditResult, error) {
	if err := lockBalances(ctx, tx, []string{c.AccountID}); err != nil {
		return CreditResult{}, err
	}
	var ref *string
	if c.Reference != "" {
		ref = &c.Reference
	}
	e := Entry{AccountID: c.AccountID, AmountMicroSEK: c.AmountMicroSEK, Kind: c.Kind, Reference: c.Reference, Note: c.Note}
	err := tx.QueryRow(ctx, `INSERT INTO ledger (account_id, amount_micro_sek, kind, reference, note, created_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (reference) DO NOTHING RETURNING id, created_at`,
		c.AccountID, c.AmountMicroSEK, c.Kind, ref, c.Note, s.now()).Scan(&e.ID, &e.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		prev, err := entryByReference(ctx, tx, c.Reference)
		if err != nil {
			return CreditResult{}, err
		}
		if prev.AccountID != c.AccountID || prev.AmountMicroSEK != c.AmountMicroSEK {
			return CreditResult{}, fmt.Errorf("ledger reference %q already used for %s %d: %w", c.Reference, prev.AccountID, prev.AmountMicroSEK, ErrConflict)
		}
		res := CreditResult{Entry: prev}
		err = tx.QueryRow(ctx, `SELECT b.balance_micro_sek, (SELECT seq FROM ledger_clock) FROM account_balances b WHERE b.account_id = $1`,
			c.AccountID).Scan(&res.BalanceMicroSEK, &res.Seq)
		return res, translate(err, "balance of "+c.AccountID)
	}
	if err != nil {
		return CreditResult{}, translate(err, c.Kind+" "+c.AccountID)
	}
	seq, bals, err := applyDeltas(ctx, tx, map[string]int64{c.AccountID: c.AmountMicroSEK})
	if err != nil {
		return CreditResult{}, err
	}
	if len(bals) != 1 {
		return CreditResult{}, fmt.Errorf("balance of %s after %s: %w", c.AccountID, c.Kind, ErrNotFound)
	}
	// Credits also bump the snapshot, which carries balances.
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, 'ledger')`, ChannelChanged); err != nil {
		return CreditResult{}, translate(err, "notify")
	}
	return CreditResult{Entry: e, Applied: true, BalanceMicroSEK: bals[0].MicroSEK, Seq: seq}, nil
}

func entryByReference(ctx context.Context, q querier, ref string) (Entry, error) {
	var e Entry
	var r *string
	err := q.QueryRow(ctx, `SELECT id, account_id, amount_micro_sek, kind, reference, note, created_at FROM ledger WHERE reference = $1`, ref).
		Scan(&e.ID, &e.AccountID, &e.AmountMicroSEK, &e.Kind, &r, &e.Note, &e.CreatedAt)
	if r != nil {
		e.Reference = *r
	}
	return e, translate(err, "ledger entry "+ref)
}

// EntryByReference returns the ledger entry with the given reference.
func (s *Store) EntryByReference(ctx context.Context, ref string) (Entry, error) {
	return entryByReference(ctx, s.pool, ref)
}

// lockBalances locks the accounts' balance rows in ID order, so that concurrent ledger
// transactions over overlapping accounts cannot deadlock. ErrNotFound when one is missing.
// The lock is taken by the schema's lock_balances function: the runtime role may not
// SELECT ... FOR UPDATE account_balances itself.
func lockBalances(ctx context.Context, tx pgx.Tx, ids []string) error {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	rows, err := tx.Query(ctx, `SELECT account_id FROM lock_balances($1)`, ids)
	if err != nil {
		return translate(err, "lock balances")
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return translate(err, "lock balances")
	}
	if len(got) != len(ids) {
		for _, id := range ids {
			if !slices.Contains(got, id) {
				return fmt.Errorf("account %s: %w", id, ErrNotFound)
			}
		}
	}
	return nil
}

// applyDeltas returns the ledger clock and the new balances (sorted by ID) of the accounts
// whose ledger entries the transaction just inserted. It changes nothing itself: the
// ledger's AFTER INSERT trigger (ledger_apply_balances, migration 008) has already added
// the entries to account_balances, ticked the ledger clock (whose row lock is held until
// commit, so clock order is commit order), stamped the rows and notified the balance
// channel. The runtime role cannot write account_balances or the clock directly. deltas
// names the accounts; its amounts are checked against nothing (the trigger summed the
// entries the statement really inserted).
func applyDeltas(ctx context.Context, tx pgx.Tx, deltas map[string]int64) (int64, []snapshot.Balance, error) {
	ids := make([]string, 0, len(deltas))
	for id := range deltas {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var seq int64
	if err := tx.QueryRow(ctx, `SELECT seq FROM ledger_clock`).Scan(&seq); err != nil {
		return 0, nil, translate(err, "read ledger clock")
	}
	rows, err := tx.Query(ctx, `SELECT account_id, balance_micro_sek FROM account_balances
		WHERE account_id = ANY($1) ORDER BY account_id`, ids)
	if err != nil {
		return 0, nil, translate(err, "read balances")
	}
	bals, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (snapshot.Balance, error) {
		var b snapshot.Balance
		err := r.Scan(&b.AccountID, &b.MicroSEK)
		return b, err
	})
	if err != nil {
		return 0, nil, translate(err, "read balances")
	}
	return seq, bals, nil
}

// Balance returns the account's balance.
func (s *Store) Balance(ctx context.Context, accountID string) (int64, error) {
	var b int64
	err := s.pool.QueryRow(ctx, `SELECT balance_micro_sek FROM account_balances WHERE account_id = $1`, accountID).Scan(&b)
	return b, translate(err, "balance of "+accountID)
}

// BalancesSince returns the balances changed after ledger clock value since, and the
// current clock. Every change with a clock value up to the returned one is included.
func (s *Store) BalancesSince(ctx context.Context, since int64) (int64, []snapshot.Balance, error) {
	return s.BalancesSinceIn(ctx, since, "")
}

// BalancesSinceIn is BalancesSince for a node in country (ISO 3166-1 alpha-2): only the
// balances of accounts whose residency policy admits country, the accounts the snapshot
// filtered for that country holds. An empty country means every account.
func (s *Store) BalancesSinceIn(ctx context.Context, since int64, country string) (int64, []snapshot.Balance, error) {
	var seq int64
	bals := []snapshot.Balance{}
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		seq, bals, err = balancesSinceTx(ctx, tx, since, country)
		return err
	})
	return seq, bals, translate(err, "balances since")
}

// balancesSinceTx is BalancesSinceIn in the caller's (repeatable read) transaction.
func balancesSinceTx(ctx context.Context, tx pgx.Tx, since int64, country string) (int64, []snapshot.Balance, error) {
	var seq int64
	bals := []snapshot.Balance{}
	if err := tx.QueryRow(ctx, `SELECT seq FROM ledger_clock`).Scan(&seq); err != nil {
		return 0, nil, err
	}
	if seq <= since {
		return seq, bals, nil
	}
	rows, err := tx.Query(ctx, `SELECT b.account_id, b.balance_micro_sek, a.residency
		FROM account_balances b JOIN accounts a ON a.id = b.account_id
		WHERE b.seq > $1 ORDER BY b.account_id`, since)
	if err != nil {
		return 0, nil, err
	}
	var b snapshot.Balance
	var policy string
	_, err = pgx.ForEachRow(rows, []any{&b.AccountID, &b.MicroSEK, &policy}, func() error {
		if country == "" || residency.Satisfies(policy, country) {
			bals = append(bals, b)
		}
		return nil
	})
	return seq, bals, err
}

// LedgerSeq returns the current ledger clock.
func (s *Store) LedgerSeq(ctx context.Context) (int64, error) {
	var seq int64
	err := s.pool.QueryRow(ctx, `SELECT seq FROM ledger_clock`).Scan(&seq)
	return seq, translate(err, "ledger clock")
}

// LedgerSum returns the sum of the account's ledger entries (the definition of its
// balance; the cached balance must always equal it).
func (s *Store) LedgerSum(ctx context.Context, accountID string) (int64, error) {
	var sum int64
	err := s.pool.QueryRow(ctx, `SELECT COALESCE(sum(amount_micro_sek), 0)::bigint FROM ledger WHERE account_id = $1`, accountID).Scan(&sum)
	return sum, translate(err, "ledger sum of "+accountID)
}
