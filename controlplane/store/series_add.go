package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sekgate/gateway/controlplane/loghist"
	"github.com/sekgate/gateway/shared/usage"
)

// Series dimensions: what a per-minute series is kept per.
const (
	DimModel   = "model"   // the record's model
	DimRoute   = "route"   // the route that answered (the last attempt's); none without attempts
	DimNode    = "node"    // the node that sent the record
	DimAccount = "account" // the record's account
)

// Dimensions are the series dimensions, in the order their rows are locked.
var Dimensions = []string{DimAccount, DimModel, DimNode, DimRoute}

// Error classes of the series: each record counts in at most one, by its result. The
// error classes (Errors) are the service's failures; the client classes are requests the
// client ended (cancelled) or the provider refused as the client's mistake (rejected).
const (
	ClassUpstream    = "upstream"     // upstream_error
	ClassTimeout     = "timeout"      // timeout
	ClassRateLimited = "rate_limited" // rate_limited
	ClassNoRoute     = "no_route"     // no_route
	ClassIncomplete  = "incomplete"   // incomplete, interrupted
	ClassOther       = "other"        // any other result but ok
	ClassRejected    = "rejected"     // rejected (client's mistake)
	ClassCancelled   = "cancelled"    // cancelled (client closed)
)

// ErrorClasses are the classes that count as errors, in column order; ClientClasses
// follow them.
var (
	ErrorClasses  = []string{ClassUpstream, ClassTimeout, ClassRateLimited, ClassNoRoute, ClassIncomplete, ClassOther}
	ClientClasses = []string{ClassRejected, ClassCancelled}
)

// classIndex is a record's class as an index into ErrorClasses followed by
// ClientClasses; -1 for ok.
func classIndex(result string) int {
	switch result {
	case usage.ResultOK:
		return -1
	case usage.ResultUpstreamError:
		return 0
	case usage.ResultTimeout:
		return 1
	case usage.ResultRateLimited:
		return 2
	case usage.ResultNoRoute:
		return 3
	case usage.ResultIncomplete, usage.ResultInterrupted:
		return 4
	case usage.ResultRejected:
		return 6
	case usage.ResultCancelled:
		return 7
	}
	return 5
}

const nClasses = 8

// seriesKey names one row of series_minutes.
type seriesKey struct {
	dim, key string
	minute   time.Time
}

// seriesSums are one minute's sums of one series.
type seriesSums struct {
	requests           int64
	classes            [nClasses]int64
	prompt, completion int64
	price              int64
	duration, ttft     loghist.Hist
}

// add counts r; false when a sum would leave the int64 range (screen bounds a batch's
// sums, so it does not happen; the caller fails the batch rather than wrap).
func (s *seriesSums) add(r *usage.Record) bool {
	s.requests++
	if c := classIndex(r.Result); c >= 0 {
		s.classes[c]++
	}
	if !addChecked(&s.prompt, r.PromptTokens) || !addChecked(&s.completion, r.CompletionTokens) ||
		!addChecked(&s.price, r.PriceMicroSEK) {
		return false
	}
	s.duration.Add(r.DurationMS)
	if r.TTFTMS > 0 {
		s.ttft.Add(r.TTFTMS)
	}
	return true
}

// recordSeriesKeys are the series rows a record counts in.
func recordSeriesKeys(nodeID string, r *usage.Record, dst []seriesKey) []seriesKey {
	m := r.TS.UTC().Truncate(time.Minute)
	dst = append(dst, seriesKey{DimAccount, r.AccountID, m}, seriesKey{DimNode, nodeID, m})
	if r.Model != "" {
		dst = append(dst, seriesKey{DimModel, r.Model, m})
	}
	if rt := r.Routing; rt != nil && len(rt.Attempts) > 0 && rt.Attempts[len(rt.Attempts)-1].Route != "" {
		dst = append(dst, seriesKey{DimRoute, rt.Attempts[len(rt.Attempts)-1].Route, m})
	}
	return dst
}

func compareSeriesKeys(a, b seriesKey) int {
	if c := strings.Compare(a.dim, b.dim); c != 0 {
		return c
	}
	if c := strings.Compare(a.key, b.key); c != 0 {
		return c
	}
	return a.minute.Compare(b.minute)
}

// addSeries adds the new records to series_minutes: one upsert row per (dimension, key,
// minute), in that order (rows locked in the same order by every batch).
func addSeries(ctx context.Context, tx pgx.Tx, nodeID string, fresh []*usage.Record) error {
	sums := map[seriesKey]*seriesSums{}
	var keys []seriesKey
	for _, r := range fresh {
		keys = recordSeriesKeys(nodeID, r, keys[:0])
		for _, k := range keys {
			s := sums[k]
			if s == nil {
				s = &seriesSums{}
				sums[k] = s
			}
			if !s.add(r) {
				return fmt.Errorf("series of %s %s overflow", k.dim, k.key)
			}
		}
	}
	if len(sums) == 0 {
		return nil
	}
	keys = keys[:0]
	for k := range sums {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareSeriesKeys)
	n := len(keys)
	dims, names, durs, ttfts := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	minutes := make([]time.Time, n)
	var cols [4 + nClasses][]int64 // requests, classes, prompt, completion, price
	for i := range cols {
		cols[i] = make([]int64, n)
	}
	var buf []byte
	for i, k := range keys {
		s := sums[k]
		dims[i], names[i], minutes[i] = k.dim, k.key, k.minute
		cols[0][i] = s.requests
		for c := range nClasses {
			cols[1+c][i] = s.classes[c]
		}
		cols[1+nClasses][i], cols[2+nClasses][i], cols[3+nClasses][i] = s.prompt, s.completion, s.price
		buf = s.duration.Trim().AppendPG(buf[:0])
		durs[i] = string(buf)
		buf = s.ttft.Trim().AppendPG(buf[:0])
		ttfts[i] = string(buf)
	}
	args := []any{dims, names, minutes}
	for _, c := range cols {
		args = append(args, c)
	}
	args = append(args, durs, ttfts)
	if _, err := tx.Exec(ctx, addSeriesSQL, args...); err != nil {
		return fmt.Errorf("update series: %w", err)
	}
	return nil
}

// addBuckets adds two bucket arrays element by element (the shorter padded with zeros).
func addBuckets(col string) string {
	return col + ` = ARRAY(SELECT coalesce(a, 0) + coalesce(b, 0) FROM unnest(s.` + col + `, EXCLUDED.` + col +
		`) WITH ORDINALITY AS t(a, b, i) ORDER BY i)`
}

var addSeriesSQL = `INSERT INTO series_minutes AS s (dimension, key, minute, requests, err_upstream, err_timeout,
		err_rate_limited, err_no_route, err_incomplete, err_other, client_rejected, client_cancelled, prompt_tokens,
		completion_tokens, price_micro_sek, duration_buckets, ttft_buckets)
	SELECT v.dim, v.key, v.minute, v.requests, v.e1, v.e2, v.e3, v.e4, v.e5, v.e6, v.c1, v.c2, v.prompt, v.completion,
		v.price, v.dur::bigint[], v.ttft::bigint[]
	FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[],
		$8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[],
		$15::bigint[], $16::text[], $17::text[])
		AS v(dim, key, minute, requests, e1, e2, e3, e4, e5, e6, c1, c2, prompt, completion, price, dur, ttft)
	ORDER BY v.dim, v.key, v.minute
	ON CONFLICT (dimension, key, minute) DO UPDATE SET requests = s.requests + EXCLUDED.requests,
		err_upstream = s.err_upstream + EXCLUDED.err_upstream, err_timeout = s.err_timeout + EXCLUDED.err_timeout,
		err_rate_limited = s.err_rate_limited + EXCLUDED.err_rate_limited,
		err_no_route = s.err_no_route + EXCLUDED.err_no_route, err_incomplete = s.err_incomplete + EXCLUDED.err_incomplete,
		err_other = s.err_other + EXCLUDED.err_other, client_rejected = s.client_rejected + EXCLUDED.client_rejected,
		client_cancelled = s.client_cancelled + EXCLUDED.client_cancelled,
		prompt_tokens = s.prompt_tokens + EXCLUDED.prompt_tokens,
		completion_tokens = s.completion_tokens + EXCLUDED.completion_tokens,
		price_micro_sek = s.price_micro_sek + EXCLUDED.price_micro_sek,
		` + addBuckets("duration_buckets") + `,
		` + addBuckets("ttft_buckets")
