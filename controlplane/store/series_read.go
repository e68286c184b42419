package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sekgate/gateway/controlplane/loghist"
)

// DimAll asks Series for the whole service: the sum of every node's series.
const DimAll = "all"

// SeriesQuery selects a series and a range.
type SeriesQuery struct {
	// Dimension is DimAll or one of Dimensions; Key the model, route, node or account
	// (ignored for DimAll).
	Dimension, Key string
	// From and To bound the range [From, To); Step (a whole number of minutes) is the
	// width of each point. From is moved back to a multiple of Step (time.Truncate); at
	// most MaxSeriesPoints steps.
	From, To time.Time
	Step     time.Duration
}

// SeriesPoint is the sums of one step of a series.
type SeriesPoint struct {
	Start    time.Time
	Requests int64
	// Classes counts requests per class: ErrorClasses then ClientClasses, in order.
	Classes                        [nClasses]int64
	PromptTokens, CompletionTokens int64
	PriceMicroSEK                  int64
	Duration, TTFT                 loghist.Hist
}

// Errors is the point's requests in ErrorClasses.
func (p *SeriesPoint) Errors() int64 {
	var n int64
	for i := range ErrorClasses {
		n += p.Classes[i]
	}
	return n
}

// MaxSeriesPoints bounds the steps of one Series answer.
const MaxSeriesPoints = 2000

// ErrBadSeriesQuery is returned for a query Series cannot answer (wrapped, with why).
var ErrBadSeriesQuery = errors.New("bad series query")

// Series reads a series: one point per step from From (aligned) to before To, every step
// present (empty ones with zero counts), added up from the per-minute rows.
func (s *Store) Series(ctx context.Context, q SeriesQuery) ([]SeriesPoint, error) {
	if q.Step < time.Minute || q.Step%time.Minute != 0 {
		return nil, fmt.Errorf("%w: step %s is not a whole number of minutes", ErrBadSeriesQuery, q.Step)
	}
	from := q.From.UTC().Truncate(q.Step)
	if !q.To.After(from) {
		return nil, fmt.Errorf("%w: to is not after from", ErrBadSeriesQuery)
	}
	n := int((q.To.Sub(from) + q.Step - 1) / q.Step)
	if n > MaxSeriesPoints {
		return nil, fmt.Errorf("%w: %d steps, at most %d", ErrBadSeriesQuery, n, MaxSeriesPoints)
	}
	points := make([]SeriesPoint, n)
	for i := range points {
		points[i].Start = from.Add(time.Duration(i) * q.Step)
	}
	// The whole service is every node's series; one key's rows are a range of the primary
	// key (its own statement, so a generic plan still uses the key).
	sql, args := seriesOfKeySQL, []any{q.Dimension, q.Key, from, q.To, int64(math.MaxInt64)}
	if q.Dimension == DimAll {
		sql, args = seriesOfAllSQL, []any{DimNode, from, q.To, int64(math.MaxInt64)}
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, translate(err, "read series")
	}
	defer rows.Close()
	var (
		m             time.Time
		r             SeriesPoint
		prompt, compl int64
		price         int64
		dur, ttft     []int64
	)
	for rows.Next() {
		if err := rows.Scan(&m, &r.Requests, &r.Classes[0], &r.Classes[1], &r.Classes[2], &r.Classes[3], &r.Classes[4],
			&r.Classes[5], &r.Classes[6], &r.Classes[7], &prompt, &compl, &price, &dur, &ttft); err != nil {
			return nil, translate(err, "read series")
		}
		i := int(m.Sub(from) / q.Step)
		if i < 0 || i >= n {
			continue
		}
		p := &points[i]
		p.Requests = satAdd(p.Requests, r.Requests)
		for c := range nClasses {
			p.Classes[c] = satAdd(p.Classes[c], r.Classes[c])
		}
		p.PromptTokens, p.CompletionTokens = satAdd(p.PromptTokens, prompt), satAdd(p.CompletionTokens, compl)
		p.PriceMicroSEK = satAdd(p.PriceMicroSEK, price)
		p.Duration.Merge(dur)
		p.TTFT.Merge(ttft)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err, "read series")
	}
	return points, nil
}

const seriesColumns = `minute, requests, err_upstream, err_timeout, err_rate_limited, err_no_route,
	err_incomplete, err_other, client_rejected, client_cancelled, LEAST(prompt_tokens, $max)::bigint,
	LEAST(completion_tokens, $max)::bigint, LEAST(price_micro_sek, $max)::bigint, duration_buckets, ttft_buckets`

var (
	seriesOfKeySQL = `SELECT ` + strings.ReplaceAll(seriesColumns, "$max", "$5") + `
		FROM series_minutes WHERE dimension = $1 AND key = $2 AND minute >= $3 AND minute < $4`
	seriesOfAllSQL = `SELECT ` + strings.ReplaceAll(seriesColumns, "$max", "$4") + `
		FROM series_minutes WHERE dimension = $1 AND minute >= $2 AND minute < $3`
)

// satAdd adds, stopping at the int64 bounds.
func satAdd(a, b int64) int64 {
	if !addChecked(&a, b) {
		if b > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return a
}

// DeleteSeriesBefore deletes up to batch per-minute series rows of minutes before cutoff
// (oldest first, skipping rows another transaction holds) and says how many it deleted.
func (s *Store) DeleteSeriesBefore(ctx context.Context, cutoff time.Time, batch int) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM series_minutes WHERE (dimension, key, minute) IN (
		SELECT dimension, key, minute FROM series_minutes WHERE minute < $1 ORDER BY minute LIMIT $2 FOR UPDATE SKIP LOCKED)`,
		cutoff, batch)
	if err != nil {
		return 0, translate(err, "delete old series")
	}
	return int(tag.RowsAffected()), nil
}
