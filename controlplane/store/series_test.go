package store_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/loghist"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/usage"
)

// seriesWant is what a series point must add up to, from the records themselves.
type seriesWant struct {
	requests, errors, rejected, cancelled int64
	prompt, completion, price             int64
	durations, ttfts                      []int64
}

// wantSeries adds the records r (sent by node) that fall in [from, from+step) and
// belong to the series (dim, key).
func wantSeries(recs []usage.Record, nodeOf map[string]string, dim, key string, from time.Time, step time.Duration) seriesWant {
	var w seriesWant
	for _, r := range recs {
		if r.TS.Before(from) || !r.TS.Before(from.Add(step)) {
			continue
		}
		route := ""
		if r.Routing != nil && len(r.Routing.Attempts) > 0 {
			route = r.Routing.Attempts[len(r.Routing.Attempts)-1].Route
		}
		k := map[string]string{store.DimModel: r.Model, store.DimAccount: r.AccountID, store.DimNode: nodeOf[r.RequestID], store.DimRoute: route}[dim]
		if dim != store.DimAll && k != key {
			continue
		}
		w.requests++
		switch r.Result {
		case usage.ResultOK:
		case usage.ResultRejected:
			w.rejected++
		case usage.ResultCancelled:
			w.cancelled++
		default:
			w.errors++
		}
		w.prompt += r.PromptTokens
		w.completion += r.CompletionTokens
		w.price += r.PriceMicroSEK
		w.durations = append(w.durations, r.DurationMS)
		if r.TTFTMS > 0 {
			w.ttfts = append(w.ttfts, r.TTFTMS)
		}
	}
	return w
}

// exactQuantile is the nearest-rank quantile of vs.
func exactQuantile(vs []int64, q float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	return float64(s[int(math.Ceil(q*float64(len(s))))-1])
}

func checkPoint(t *testing.T, what string, p store.SeriesPoint, w seriesWant) {
	t.Helper()
	rej, canc := p.Classes[len(store.ErrorClasses)], p.Classes[len(store.ErrorClasses)+1]
	if p.Requests != w.requests || p.Errors() != w.errors || rej != w.rejected || canc != w.cancelled ||
		p.PromptTokens != w.prompt || p.CompletionTokens != w.completion || p.PriceMicroSEK != w.price ||
		p.Duration.Count() != int64(len(w.durations)) || p.TTFT.Count() != int64(len(w.ttfts)) {
		t.Fatalf("%s: point %+v, want %+v", what, p, w)
	}
	for _, h := range []struct {
		hist loghist.Hist
		vs   []int64
	}{{p.Duration, w.durations}, {p.TTFT, w.ttfts}} {
		if len(h.vs) == 0 {
			continue
		}
		for _, q := range []float64{0.5, 0.9, 0.99} {
			got, _ := h.hist.Quantile(q)
			exact := exactQuantile(h.vs, q)
			if exact == 0 && got != 0 || exact > 0 && math.Abs(got-exact)/exact > loghist.RelErr+1e-12 {
				t.Fatalf("%s: p%v %.2f ms, exact %.0f ms, beyond %.2f %%", what, q*100, got, exact, loghist.RelErr*100)
			}
		}
	}
}

// The series of every dimension add up exactly what was ingested, each record once
// however often its batch is sent, and their percentiles are within the stated bound.
func TestSeriesCountEachRecordOnce(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	accts := fundedAccounts(t, s, 2)
	base := time.Now().UTC().Truncate(time.Minute).Add(-10 * time.Minute)
	results := []string{usage.ResultOK, usage.ResultOK, usage.ResultUpstreamError, usage.ResultTimeout, usage.ResultCancelled,
		usage.ResultRejected, usage.ResultOK, usage.ResultInterrupted, "something_new"}
	var recs []usage.Record
	for i := range 90 {
		r := record(fmt.Sprintf("req_series_%03d", i), accts[i%2], base.Add(time.Duration(i)*7*time.Second), int64(10+i), int64(i%7))
		r.Result = results[i%len(results)]
		r.DurationMS = int64(i * i * 13 % 40_000)
		if i%3 == 0 {
			r.Stream, r.TTFTMS = true, int64(1+i*17%900)
		}
		if i%4 == 0 { // failed over to r2
			r.Routing = &usage.Routing{Attempts: []usage.Attempt{{Route: "r1", Status: 503}, {Route: "r2", Status: 200}}}
		}
		if i%10 == 0 {
			r.Routing = nil // no attempt: no route series
		}
		recs = append(recs, r)
	}
	nodeOf := map[string]string{}
	ingest := func(node string, rs []usage.Record) {
		t.Helper()
		if _, err := s.IngestBatch(ctx, usage.Batch{NodeID: node, BatchID: "b-" + node, Records: rs}); err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if nodeOf[r.RequestID] == "" {
				nodeOf[r.RequestID] = node
			}
		}
	}
	ingest("node-a", recs[:60])
	ingest("node-a", recs[:60])   // the same batch again: nothing new
	ingest("node-b", recs[40:])   // overlapping: only 60.. are new, and node-b's
	ingest("node-b", recs[55:70]) // nothing new

	check := func(dim, key string, step time.Duration) {
		t.Helper()
		points, err := s.Series(ctx, store.SeriesQuery{Dimension: dim, Key: key, From: base, To: base.Add(12 * time.Minute), Step: step})
		if err != nil {
			t.Fatal(err)
		}
		// From moves back to a multiple of the step, so the points are the steps that
		// overlap the range, however the range lies against them.
		first := base.Truncate(step)
		if want := int((base.Add(12*time.Minute).Sub(first) + step - 1) / step); len(points) != want {
			t.Fatalf("%s %s: %d points, want %d", dim, key, len(points), want)
		}
		for _, p := range points {
			checkPoint(t, fmt.Sprintf("%s %q step %s at %s", dim, key, step, p.Start.Format(time.TimeOnly)), p,
				wantSeries(recs, nodeOf, dim, key, p.Start, step))
		}
	}
	for _, step := range []time.Duration{time.Minute, 5 * time.Minute, time.Hour} {
		check(store.DimAll, "", step)
		check(store.DimModel, "llama-3.1-8b", step)
		check(store.DimModel, "other-model", step)
		check(store.DimRoute, "r1", step)
		check(store.DimRoute, "r2", step)
		check(store.DimNode, "node-a", step)
		check(store.DimNode, "node-b", step)
		check(store.DimAccount, accts[0], step)
		check(store.DimAccount, accts[1], step)
	}
	var total int64
	points, _ := s.Series(ctx, store.SeriesQuery{Dimension: store.DimAll, From: base, To: base.Add(time.Hour), Step: time.Hour})
	for _, p := range points {
		total += p.Requests
	}
	if total != int64(len(recs)) {
		t.Fatalf("%d requests in the series, %d records", total, len(recs))
	}
}

func TestSeriesBadQueries(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	now := time.Now()
	for _, q := range []store.SeriesQuery{
		{Dimension: store.DimAll, From: now.Add(-time.Hour), To: now, Step: 30 * time.Second},
		{Dimension: store.DimAll, From: now.Add(-time.Hour), To: now, Step: 90 * time.Second},
		{Dimension: store.DimAll, From: now, To: now.Add(-time.Hour), Step: time.Minute},
		{Dimension: store.DimAll, From: now.Add(-48 * time.Hour), To: now, Step: time.Minute},
	} {
		if _, err := s.Series(context.Background(), q); !errors.Is(err, store.ErrBadSeriesQuery) {
			t.Errorf("%+v: %v", q, err)
		}
	}
}
