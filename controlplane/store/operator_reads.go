package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sekgate/gateway/shared/usage"
)

// KindAdjustment is an operator's manual correction of a balance: either sign, with a
// reason in the note.
const KindAdjustment = "adjustment"

// AddAdjustment appends a manual adjustment (amount of either sign, not zero) with its
// reason; the balance may go below zero.
func (s *Store) AddAdjustment(ctx context.Context, accountID string, amountMicroSEK int64, reason string) (CreditResult, error) {
	if amountMicroSEK == 0 || reason == "" {
		return CreditResult{}, fmt.Errorf("adjust %s: a non-zero amount and a reason are required: %w", accountID, ErrInvalid)
	}
	var res CreditResult
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		res, err = s.appendTx(ctx, tx, Credit{AccountID: accountID, AmountMicroSEK: amountMicroSEK, Kind: KindAdjustment, Note: reason})
		return err
	})
	return res, err
}

// LedgerQuery selects an account's ledger entries, newest first.
type LedgerQuery struct {
	AccountID string
	Before    int64 // only entries with a smaller ID (0: from the newest)
	Limit     int   // 1..1000
}

// ListLedger returns a page of the account's ledger (keyset pagination on the entry ID,
// over the ledger_account index).
func (s *Store) ListLedger(ctx context.Context, q LedgerQuery) ([]Entry, error) {
	if q.Limit <= 0 || q.Limit > 1000 {
		return nil, fmt.Errorf("list ledger: limit %d: %w", q.Limit, ErrInvalid)
	}
	rows, err := s.pool.Query(ctx, `SELECT id, account_id, amount_micro_sek, kind, coalesce(reference, ''), note, created_at
		FROM ledger WHERE account_id = $1 AND ($2 = 0 OR id < $2) ORDER BY id DESC LIMIT $3`, q.AccountID, q.Before, q.Limit)
	if err != nil {
		return nil, translate(err, "ledger of "+q.AccountID)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Entry, error) {
		var e Entry
		err := r.Scan(&e.ID, &e.AccountID, &e.AmountMicroSEK, &e.Kind, &e.Reference, &e.Note, &e.CreatedAt)
		e.CreatedAt = e.CreatedAt.UTC()
		return e, err
	})
	if out == nil {
		out = []Entry{}
	}
	return out, translate(err, "ledger of "+q.AccountID)
}

// DailyUsage is an account's usage of one model on one day (UTC).
type DailyUsage struct {
	Day string // YYYY-MM-DD
	ModelUsage
}

// UsageByDay returns the account's daily aggregates per model from the given day (UTC) on,
// by day and model.
func (s *Store) UsageByDay(ctx context.Context, accountID string, from time.Time) ([]DailyUsage, error) {
	rows, err := s.pool.Query(ctx, `SELECT to_char(day, 'YYYY-MM-DD'), model, least(requests, 9223372036854775807)::bigint,
			least(prompt_tokens, 9223372036854775807)::bigint, least(completion_tokens, 9223372036854775807)::bigint,
			least(price_micro_sek, 9223372036854775807)::bigint
		FROM usage_daily WHERE account_id = $1 AND day >= $2::date ORDER BY day, model`,
		accountID, from.UTC().Format(time.DateOnly))
	if err != nil {
		return nil, translate(err, "daily usage of "+accountID)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DailyUsage, error) {
		var u DailyUsage
		err := r.Scan(&u.Day, &u.Model, &u.Requests, &u.PromptTokens, &u.CompletionTokens, &u.PriceMicroSEK)
		return u, err
	})
	if out == nil {
		out = []DailyUsage{}
	}
	return out, translate(err, "daily usage of "+accountID)
}

// OperatorRecordQuery selects request records of any account for operators, newest first.
// Empty fields do not filter.
type OperatorRecordQuery struct {
	AccountID string
	// KeyID selects one key's records, found through its account's index (there is no
	// per-key index): records naming a key that is not in api_keys are not found by it.
	KeyID string
	// TestBox selects only records without a key (console test-box requests).
	TestBox bool
	Model   string
	Result  string
	// Underreported selects the records flagged routing.output_underreported: the
	// provider reported less output than the node counted delivered.
	Underreported bool
	From, To      time.Time // ts in [From, To); zero: open
	Limit         int       // 1..1000
	After         *RecordPos
}

// ListRecordsForOperator returns a page of request records of any account.
func (s *Store) ListRecordsForOperator(ctx context.Context, q OperatorRecordQuery) ([]usage.Record, error) {
	var args []any
	where := `true`
	add := func(cond string, v any) {
		args = append(args, v)
		where += fmt.Sprintf(" AND "+cond, len(args))
	}
	if q.AccountID != "" {
		add(`account_id = $%d`, q.AccountID)
	}
	if q.KeyID != "" {
		add(`key_id = $%d`, q.KeyID)
		if q.AccountID == "" {
			// There is no per-key index: the key's account's index finds its records.
			where += fmt.Sprintf(` AND account_id = (SELECT account_id FROM api_keys WHERE id = $%d)`, len(args))
		}
	}
	if q.TestBox {
		where += ` AND key_id IS NULL`
	}
	if q.Model != "" {
		add(`model = $%d`, q.Model)
	}
	if q.Result != "" {
		add(`result = $%d`, q.Result)
	}
	if q.Underreported {
		// routing_json holds the records stored since migration 016, routing those before.
		where += ` AND (routing_json->>'output_underreported' = 'true' OR routing->>'output_underreported' = 'true')`
	}
	if !q.From.IsZero() {
		add(`ts >= $%d`, q.From)
	}
	if !q.To.IsZero() {
		add(`ts < $%d`, q.To)
	}
	return s.recordPage(ctx, where, args, q.After, q.Limit)
}

// GetRecordForOperator returns one record of any account.
func (s *Store) GetRecordForOperator(ctx context.Context, requestID string) (usage.Record, error) {
	r, err := scanRecord(s.pool.QueryRow(ctx, `SELECT `+recordColumns+` FROM request_records WHERE request_id = $1`, requestID))
	return r, translate(err, "get record "+requestID)
}

// KeysLastUse returns, per key of the account, the time of its newest request record
// (key_last_use, which the ingest keeps and retention leaves; keys never used are absent).
func (s *Store) KeysLastUse(ctx context.Context, accountID string) (map[string]time.Time, error) {
	rows, err := s.pool.Query(ctx, `SELECT k.id, u.last_ts FROM api_keys k
		JOIN key_last_use u ON u.key_id = k.id
		WHERE k.account_id = $1`, accountID)
	if err != nil {
		return nil, translate(err, "last use of keys of "+accountID)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var id string
		var ts time.Time
		if err := rows.Scan(&id, &ts); err != nil {
			return nil, translate(err, "last use of keys of "+accountID)
		}
		out[id] = ts.UTC()
	}
	return out, translate(rows.Err(), "last use of keys of "+accountID)
}

// AccountQuery selects accounts for operators, by ID.
type AccountQuery struct {
	// Q matches the exact account ID or a part of the customer name (any case); empty: all.
	Q string
	// After continues a listing: only accounts with a greater ID.
	After string
	Limit int // 1..1000
}

// SearchAccounts returns a page of accounts ordered by ID.
func (s *Store) SearchAccounts(ctx context.Context, q AccountQuery) ([]Account, error) {
	if q.Limit <= 0 || q.Limit > 1000 {
		return nil, fmt.Errorf("search accounts: limit %d: %w", q.Limit, ErrInvalid)
	}
	like := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(q.Q)
	return s.queryAccounts(ctx, "search accounts", `SELECT `+accountColumns+`
		FROM accounts a LEFT JOIN account_balances b ON b.account_id = a.id
		WHERE ($1 = '' OR a.id = $1 OR a.customer ILIKE '%' || $2 || '%') AND ($3 = '' OR a.id > $3)
		ORDER BY a.id LIMIT $4`, q.Q, like, q.After, q.Limit)
}
