package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sekgate/gateway/shared/usage"
)

// RecordQuery selects an account's request records, newest first.
type RecordQuery struct {
	AccountID string
	// KeyID narrows to one key; empty means all keys and the console test box.
	KeyID string
	// Limit bounds the page (1..1000).
	Limit int
	// After continues a listing: only records older than this position are returned.
	After *RecordPos
}

// RecordPos is a position in the newest-first order: (ts, request_id).
type RecordPos struct {
	TS        time.Time
	RequestID string
}

// recordColumns are the columns scanRecord reads. A record's routing is in routing_json, or,
// for records stored before migration 016, in routing (jsonb).
const recordColumns = `request_id, ts, account_id, key_id, model, endpoint, stream, provider, residency, status,
	result, prompt_tokens, completion_tokens, price_micro_sek, duration_ms, COALESCE(routing_json, routing::json)`

func scanRecord(row pgx.Row) (usage.Record, error) {
	var r usage.Record
	var routing []byte
	err := row.Scan(&r.RequestID, &r.TS, &r.AccountID, &r.KeyID, &r.Model, &r.Endpoint, &r.Stream, &r.Provider,
		&r.Residency, &r.Status, &r.Result, &r.PromptTokens, &r.CompletionTokens, &r.PriceMicroSEK, &r.DurationMS, &routing)
	if err != nil {
		return r, err
	}
	if len(routing) > 0 && string(routing) != "null" {
		r.Routing = new(usage.Routing)
		if err := json.Unmarshal(routing, r.Routing); err != nil {
			return r, fmt.Errorf("decode routing of %s: %w", r.RequestID, err)
		}
	}
	r.TS = r.TS.UTC()
	return r, nil
}

// ListRecords returns a page of the account's records, newest first (keyset pagination
// on (ts, request_id) over the per-account and per-key indexes).
func (s *Store) ListRecords(ctx context.Context, q RecordQuery) ([]usage.Record, error) {
	args := []any{q.AccountID}
	where := `account_id = $1`
	if q.KeyID != "" {
		args = append(args, q.KeyID)
		where += fmt.Sprintf(` AND key_id = $%d`, len(args))
	}
	return s.recordPage(ctx, where, args, q.After, q.Limit)
}

// recordPage returns the records that match where (its parameters in args) and, when
// after is set, are older than after: newest first, at most limit (1..1000). One page
// query for the account's listing and the operator's.
func (s *Store) recordPage(ctx context.Context, where string, args []any, after *RecordPos, limit int) ([]usage.Record, error) {
	if limit <= 0 || limit > 1000 {
		return nil, fmt.Errorf("list records: limit %d: %w", limit, ErrInvalid)
	}
	if after != nil {
		args = append(args, after.TS, after.RequestID)
		where += fmt.Sprintf(` AND (ts, request_id) < ($%d, $%d)`, len(args)-1, len(args))
	}
	args = append(args, limit)
	rows, err := s.pool.Query(ctx, `SELECT `+recordColumns+` FROM request_records WHERE `+where+`
		ORDER BY ts DESC, request_id DESC LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, translate(err, "list records")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (usage.Record, error) { return scanRecord(r) })
	if out == nil {
		out = []usage.Record{}
	}
	return out, translate(err, "list records")
}

// GetRecord returns one record of the account; ErrNotFound for an unknown ID and for
// another account's record alike.
func (s *Store) GetRecord(ctx context.Context, accountID, requestID string) (usage.Record, error) {
	r, err := scanRecord(s.pool.QueryRow(ctx, `SELECT `+recordColumns+` FROM request_records
		WHERE request_id = $1 AND account_id = $2`, requestID, accountID))
	return r, translate(err, "get record "+requestID)
}

// ModelUsage is an account's usage of one model over a period.
type ModelUsage struct {
	Model            string
	Requests         int64
	PromptTokens     int64
	CompletionTokens int64
	PriceMicroSEK    int64
}

// UsageSince sums the account's daily aggregates per model from the given day (UTC, as a
// date) on, sorted by model.
func (s *Store) UsageSince(ctx context.Context, accountID string, from time.Time) ([]ModelUsage, error) {
	// The aggregates are numeric; sums beyond int64 saturate (they cannot be reached by
	// records within the ingest bounds in any realistic window).
	rows, err := s.pool.Query(ctx, `SELECT model, least(sum(requests), 9223372036854775807)::bigint,
			least(sum(prompt_tokens), 9223372036854775807)::bigint,
			least(sum(completion_tokens), 9223372036854775807)::bigint,
			least(sum(price_micro_sek), 9223372036854775807)::bigint
		FROM usage_daily WHERE account_id = $1 AND day >= $2::date GROUP BY model ORDER BY model`,
		accountID, from.UTC().Format(time.DateOnly))
	if err != nil {
		return nil, translate(err, "usage of "+accountID)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ModelUsage, error) {
		var u ModelUsage
		err := r.Scan(&u.Model, &u.Requests, &u.PromptTokens, &u.CompletionTokens, &u.PriceMicroSEK)
		return u, err
	})
	if out == nil {
		out = []ModelUsage{}
	}
	return out, translate(err, "usage of "+accountID)
}

// DeleteRecordsBefore deletes up to batch records older than cutoff, oldest first, and
// returns how many it deleted. Ledger entries and daily aggregates are kept.
func (s *Store) DeleteRecordsBefore(ctx context.Context, cutoff time.Time, batch int) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM request_records WHERE request_id IN (
		SELECT request_id FROM request_records WHERE ts < $1 ORDER BY ts LIMIT $2 FOR UPDATE SKIP LOCKED)`, cutoff, batch)
	if err != nil {
		return 0, translate(err, "delete old records")
	}
	return int(tag.RowsAffected()), nil
}
