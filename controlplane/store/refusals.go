package store

import (
	"context"
	"time"

	"github.com/sekgate/gateway/shared/internalapi"
)

// AddRefusals adds a node's refusal counts to the daily table, in one statement.
func (s *Store) AddRefusals(ctx context.Context, es []internalapi.RefusalCount) error {
	if len(es) == 0 {
		return nil
	}
	days, accts, keys, codes := make([]string, len(es)), make([]string, len(es)), make([]string, len(es)), make([]string, len(es))
	statuses, counts := make([]int32, len(es)), make([]int64, len(es))
	for i, e := range es {
		days[i], accts[i], keys[i], codes[i], statuses[i], counts[i] = e.Day, e.AccountID, e.KeyID, e.Code, int32(e.Status), e.Count
	}
	// Rows are summed per key first, so one statement never touches a row twice.
	_, err := s.pool.Exec(ctx, `INSERT INTO refusals_daily (day, account_id, key_id, status, code, count)
		SELECT day::date, account_id, key_id, status, code, sum(count)
		FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::bigint[]) AS t(day, account_id, key_id, status, code, count)
		GROUP BY 1, 2, 3, 4, 5
		ON CONFLICT (account_id, day, key_id, status, code) DO UPDATE SET count = refusals_daily.count + EXCLUDED.count`,
		days, accts, keys, statuses, codes, counts)
	return translate(err, "add refusals")
}

// Refusal is one row of the daily refusal counts.
type Refusal struct {
	Day    time.Time
	KeyID  string
	Status int
	Code   string
	Count  int64
}

// ListRefusals returns an account's refusal counts of the days from since on, newest day
// first, the most frequent first within a day.
func (s *Store) ListRefusals(ctx context.Context, accountID string, since time.Time) ([]Refusal, error) {
	rows, err := s.pool.Query(ctx, `SELECT day, key_id, status, code, count FROM refusals_daily
		WHERE account_id = $1 AND day >= $2 ORDER BY day DESC, count DESC, key_id, status, code LIMIT 1000`, accountID, UTCDay(since))
	if err != nil {
		return nil, translate(err, "list refusals")
	}
	defer rows.Close()
	var out []Refusal
	for rows.Next() {
		var r Refusal
		var st int32
		if err := rows.Scan(&r.Day, &r.KeyID, &st, &r.Code, &r.Count); err != nil {
			return nil, translate(err, "list refusals")
		}
		r.Status = int(st)
		out = append(out, r)
	}
	return out, translate(rows.Err(), "list refusals")
}
