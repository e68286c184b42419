package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

// liveRange is a range the charts of the live service view offer, with its step.
type liveRange struct {
	Name, Label, StepLabel string
	Span, Step             time.Duration
}

// liveRanges are the charts' ranges; the first is the default.
var liveRanges = []liveRange{
	{"1h", "Last hour", "a minute", time.Hour, time.Minute},
	{"6h", "6 hours", "5 minutes", 6 * time.Hour, 5 * time.Minute},
	{"24h", "Last day", "15 minutes", 24 * time.Hour, 15 * time.Minute},
	{"7d", "7 days", "an hour", 7 * 24 * time.Hour, time.Hour},
}

// rangeOf is the range a page's ?range= names (the default for anything else).
func rangeOf(name string) liveRange {
	if i := slices.IndexFunc(liveRanges, func(r liveRange) bool { return r.Name == name }); i >= 0 {
		return liveRanges[i]
	}
	return liveRanges[0]
}

// liveView is what the "live" template draws: a summary of the range and the charts'
// container, whose data-series the charts script (static/live.js) draws with uPlot and
// refreshes from Source.
type liveView struct {
	Title, Dimension, Key string
	Range                 liveRange
	Ranges                []liveRange
	Series                adminapi.Series
	JSON                  string // the series as the API answered it
	Source                string // the console URL the charts refresh from
	Error                 string
}

// seriesPath is the admin API query of a live view.
func seriesPath(dim, key string, rg liveRange, now time.Time) string {
	q := url.Values{"dimension": {dim}, "from": {now.Add(-rg.Span).UTC().Format(time.RFC3339)},
		"to": {now.UTC().Format(time.RFC3339)}, "step": {rg.Step.String()}}
	if dim != adminapi.SeriesAll {
		q.Set("key", key)
	}
	return "/admin/v1/series?" + q.Encode()
}

// live reads the series of a page's live view (dimension dim, key key) over the range the
// request names.
func (c *Console) live(r *http.Request, s *session, title, dim, key string) liveView {
	rg := rangeOf(r.URL.Query().Get("range"))
	v := liveView{Title: title, Dimension: dim, Key: key, Range: rg, Ranges: liveRanges}
	src := url.Values{"dimension": {dim}, "range": {rg.Name}}
	if dim != adminapi.SeriesAll {
		src.Set("key", key)
	}
	v.Source = "/console/series?" + src.Encode()
	if st, msg := c.api(r, s, http.MethodGet, seriesPath(dim, key, rg, c.now()), nil, &v.Series); st != http.StatusOK {
		v.Error = "The charts could not be read: " + msg
		return v
	}
	b, _ := json.Marshal(v.Series)
	v.JSON = string(b)
	return v
}

// seriesJSON is GET /console/series?dimension=&key=&range=: the series the charts of a
// page refresh from, as the admin API answers it.
func (c *Console) seriesJSON(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	rg := rangeOf(q.Get("range"))
	dim := q.Get("dimension")
	var out adminapi.Series
	st, msg := c.api(r, s, http.MethodGet, seriesPath(dim, q.Get("key"), rg, c.now()), nil, &out)
	w.Header().Set("Content-Type", "application/json")
	if st != http.StatusOK {
		w.WriteHeader(st)
		b, _ := json.Marshal(map[string]any{"error": map[string]string{"message": msg}})
		_, _ = w.Write(b)
		return
	}
	b, _ := json.Marshal(out)
	_, _ = w.Write(b)
}

// pct formats a percentile in milliseconds ("—" when none was measured).
func pct(v *float64) string {
	switch {
	case v == nil:
		return "—"
	case *v < 10:
		return strconv.FormatFloat(*v, 'f', 1, 64) + " ms"
	}
	return strconv.FormatFloat(*v, 'f', 0, 64) + " ms"
}

// perTime formats a request rate: per second from 1 a second, else per minute.
func perTime(rps float64) string {
	if rps >= 1 {
		return strconv.FormatFloat(rps, 'f', 2, 64) + "/s"
	}
	return strconv.FormatFloat(rps*60, 'f', 2, 64) + "/min"
}

// rate formats an error rate as a percentage ("—" without requests).
func rate(v *float64) string {
	if v == nil {
		return "—"
	}
	return strconv.FormatFloat(*v*100, 'f', 1, 64) + " %"
}
