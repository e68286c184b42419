package store

import (
	"context"
	"time"
)

// Overview is the operator's view of the service at a glance.
type Overview struct {
	// SpendTodayMicroSEK and SpendMonthMicroSEK are what accounts were charged this UTC day
	// and month; RequestsToday and RequestsMonth the requests behind them.
	SpendTodayMicroSEK, SpendMonthMicroSEK int64
	RequestsToday, RequestsMonth           int64
	// ResultsToday counts today's request records by result (ok, upstream_error, …).
	ResultsToday map[string]int64
	// LowBalance are the accounts (not suspended) whose balance is under the threshold,
	// lowest first (at most 100).
	LowBalance []Account
	// PendingSignups counts access requests waiting for review.
	PendingSignups int64
	// SilentNodes are the nodes not seen since the cutoff.
	SilentNodes []Node
}

// Overview gathers the figures of the overview at now: accounts under lowBalance micro-SEK,
// nodes silent for longer than silentAfter.
func (s *Store) Overview(ctx context.Context, now time.Time, lowBalance int64, silentAfter time.Duration) (Overview, error) {
	o := Overview{ResultsToday: map[string]int64{}}
	day := UTCDay(now)
	month := time.Date(day.Year(), day.Month(), 1, 0, 0, 0, 0, time.UTC)
	err := s.pool.QueryRow(ctx, `SELECT
			COALESCE(sum(price_micro_sek) FILTER (WHERE day = $1), 0), COALESCE(sum(price_micro_sek), 0),
			COALESCE(sum(requests) FILTER (WHERE day = $1), 0), COALESCE(sum(requests), 0)
		FROM usage_daily WHERE day >= $2 AND day <= $1`, day, month).
		Scan(&o.SpendTodayMicroSEK, &o.SpendMonthMicroSEK, &o.RequestsToday, &o.RequestsMonth)
	if err != nil {
		return o, translate(err, "overview: spend")
	}
	// Today's records are one range of request IDs (record_days.go), so this reads today's
	// partition only.
	rows, err := s.pool.Query(ctx, `SELECT result, count(*) FROM request_records
		WHERE request_id >= $1 AND request_id < $2 GROUP BY result`, DayBound(day), DayBound(day.AddDate(0, 0, 1)))
	if err != nil {
		return o, translate(err, "overview: results")
	}
	for rows.Next() {
		var r string
		var n int64
		if err := rows.Scan(&r, &n); err != nil {
			rows.Close()
			return o, translate(err, "overview: results")
		}
		o.ResultsToday[r] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return o, translate(err, "overview: results")
	}
	if o.LowBalance, err = s.lowBalances(ctx, lowBalance); err != nil {
		return o, err
	}
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM signups WHERE status = 'pending'`).Scan(&o.PendingSignups); err != nil {
		return o, translate(err, "overview: signups")
	}
	nodes, err := s.ListNodes(ctx)
	if err != nil {
		return o, err
	}
	for _, n := range nodes {
		if now.Sub(n.LastSeen) > silentAfter {
			o.SilentNodes = append(o.SilentNodes, n)
		}
	}
	return o, nil
}

// overviewLowBalanceRows bounds the low-balance list of the overview (the lowest first).
const overviewLowBalanceRows = 100

// lowBalances returns the accounts, not suspended, whose balance is under lowBalance,
// lowest first, at most overviewLowBalanceRows of them.
func (s *Store) lowBalances(ctx context.Context, lowBalance int64) ([]Account, error) {
	return s.queryAccounts(ctx, "overview: low balances", `SELECT `+accountColumns+`
		FROM accounts a LEFT JOIN account_balances b ON b.account_id = a.id
		WHERE NOT a.suspended AND COALESCE(b.balance_micro_sek, 0) < $1
		ORDER BY COALESCE(b.balance_micro_sek, 0), a.created_at, a.id LIMIT $2`, lowBalance, overviewLowBalanceRows)
}
