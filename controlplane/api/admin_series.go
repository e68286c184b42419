package api

import (
	"errors"
	"math"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/controlplane/loghist"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/money"
)

// seriesSteps are the steps GET /admin/v1/series picks from when none is asked: the
// smallest that gives at most seriesAutoPoints points.
var seriesSteps = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, 6 * time.Hour, 24 * time.Hour}

const seriesAutoPoints = 360

// series is GET /admin/v1/series?dimension=&key=&from=&to=&step=: a per-minute series
// (store.Series) added up into steps, with percentiles from its buckets.
func (s *server) series(w http.ResponseWriter, r *http.Request) {
	q, ok := s.seriesQuery(w, r.URL.Query())
	if !ok {
		return
	}
	points, err := s.cfg.Store.Series(r.Context(), q)
	if errors.Is(err, store.ErrBadSeriesQuery) {
		writeError(w, invalid("step", "%s.", err.Error()))
		return
	}
	if err != nil {
		s.storeError(w, r, err, "series")
		return
	}
	out := adminapi.Series{Dimension: q.Dimension, Key: q.Key, From: q.From.UTC().Truncate(q.Step), To: q.To.UTC(),
		StepSeconds: int64(q.Step / time.Second), PercentileError: math.Round(loghist.RelErr*1e4) / 1e4,
		ErrorClasses: store.ErrorClasses, ClientClasses: store.ClientClasses, Points: make([]adminapi.SeriesPoint, len(points))}
	var total store.SeriesPoint
	for i := range points {
		p := &points[i]
		out.Points[i] = seriesPoint(p, q.Step)
		addPoint(&total, p)
	}
	total.Start = out.From
	out.Total = seriesPoint(&total, out.To.Sub(out.From))
	writeJSON(w, http.StatusOK, out)
}

// seriesQuery reads the query parameters; it writes the 400 itself when one is bad.
func (s *server) seriesQuery(w http.ResponseWriter, v url.Values) (store.SeriesQuery, bool) {
	q := store.SeriesQuery{Dimension: v.Get("dimension"), Key: v.Get("key")}
	if q.Dimension == "" {
		q.Dimension = adminapi.SeriesAll
	}
	switch {
	case !slices.Contains(adminapi.SeriesDimensions, q.Dimension):
		writeError(w, invalid("dimension", "dimension must be one of all, model, route, node, account."))
		return q, false
	case q.Dimension == adminapi.SeriesAll && v.Has("key"):
		writeError(w, invalid("key", "key names a model, route, node or account; dimension all takes none."))
		return q, false
	case q.Dimension != adminapi.SeriesAll && (q.Key == "" || !validText(q.Key, 200)):
		writeError(w, invalid("key", "key is required with dimension %s: the %s's ID (at most 200 characters).", q.Dimension, q.Dimension))
		return q, false
	}
	now := s.now().UTC()
	q.To, q.From = now, now.Add(-time.Hour)
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{"to", &q.To}, {"from", &q.From}} {
		if raw := v.Get(t.name); raw != "" {
			at, err := time.Parse(time.RFC3339, raw)
			if err != nil {
				writeError(w, invalid(t.name, "%s must be an RFC 3339 time such as 2026-11-28T09:00:00Z.", t.name))
				return q, false
			}
			*t.dst = at
		}
	}
	if !v.Has("from") && v.Has("to") {
		q.From = q.To.Add(-time.Hour)
	}
	if !q.From.Before(q.To) {
		writeError(w, invalid("from", "from must be before to."))
		return q, false
	}
	if raw := v.Get("step"); raw != "" {
		d, err := time.ParseDuration(raw)
		if err != nil || d < time.Minute || d%time.Minute != 0 || d > 31*24*time.Hour {
			writeError(w, invalid("step", "step must be a whole number of minutes from 1m to 744h, such as 1m, 15m or 1h."))
			return q, false
		}
		q.Step = d
	} else {
		q.Step = seriesSteps[len(seriesSteps)-1]
		for _, d := range seriesSteps {
			if q.To.Sub(q.From) <= d*seriesAutoPoints {
				q.Step = d
				break
			}
		}
	}
	if n := (q.To.Sub(q.From.UTC().Truncate(q.Step)) + q.Step - 1) / q.Step; n > store.MaxSeriesPoints {
		writeError(w, invalid("step", "from %s to %s in steps of %s is %d points, at most %d: take a larger step.",
			q.From.Format(time.RFC3339), q.To.Format(time.RFC3339), q.Step, n, store.MaxSeriesPoints))
		return q, false
	}
	return q, true
}

// addPoint adds p's sums to total.
func addPoint(total, p *store.SeriesPoint) {
	total.Requests += p.Requests
	for c := range p.Classes {
		total.Classes[c] += p.Classes[c]
	}
	total.PromptTokens += p.PromptTokens
	total.CompletionTokens += p.CompletionTokens
	total.PriceMicroSEK += p.PriceMicroSEK
	total.Duration.Merge(p.Duration)
	total.TTFT.Merge(p.TTFT)
}

// seriesPoint is p as the API answers it, over a step of width step.
func seriesPoint(p *store.SeriesPoint, step time.Duration) adminapi.SeriesPoint {
	out := adminapi.SeriesPoint{T: p.Start, Requests: p.Requests, Errors: p.Errors(), ByClass: map[string]int64{},
		PromptTokens: p.PromptTokens, CompletionTokens: p.CompletionTokens, PriceMicroSEK: p.PriceMicroSEK,
		PriceSEK: money.FormatSEK(p.PriceMicroSEK), DurationMS: percentiles(p.Duration), TTFTMS: percentiles(p.TTFT)}
	if step > 0 {
		out.RequestsPerSecond = round(float64(p.Requests)/step.Seconds(), 1e4)
	}
	if p.Requests > 0 {
		rate := round(float64(out.Errors)/float64(p.Requests), 1e4)
		out.ErrorRate = &rate
	}
	for i, c := range append(slices.Clone(store.ErrorClasses), store.ClientClasses...) {
		out.ByClass[c] = p.Classes[i]
	}
	return out
}

// percentiles reads p50, p90 and p99 from h, to a tenth of a millisecond.
func percentiles(h loghist.Hist) adminapi.Percentiles {
	out := adminapi.Percentiles{Count: h.Count()}
	for _, x := range []struct {
		q   float64
		dst **float64
	}{{0.5, &out.P50}, {0.9, &out.P90}, {0.99, &out.P99}} {
		if v, ok := h.Quantile(x.q); ok {
			v = round(v, 10)
			*x.dst = &v
		}
	}
	return out
}

func round(v, scale float64) float64 { return math.Round(v*scale) / scale }
