package adminapi

import "time"

// Series dimensions of GET /admin/v1/series.
const (
	SeriesAll     = "all"     // the whole service (every node's records)
	SeriesModel   = "model"   // one model
	SeriesRoute   = "route"   // one route: the route that answered
	SeriesNode    = "node"    // one data-plane node: the node that sent the records
	SeriesAccount = "account" // one account
)

// SeriesDimensions are the dimensions GET /admin/v1/series accepts.
var SeriesDimensions = []string{SeriesAll, SeriesModel, SeriesRoute, SeriesNode, SeriesAccount}

// Series is GET /admin/v1/series: a per-minute series added up into steps over [From, To).
type Series struct {
	Dimension   string    `json:"dimension"`
	Key         string    `json:"key,omitempty"` // absent for "all"
	From        time.Time `json:"from"`          // aligned to the step
	To          time.Time `json:"to"`
	StepSeconds int64     `json:"step_seconds"`
	// PercentileError bounds the relative error of every percentile (0.0905: within
	// 9.05 % of the true value at the same rank; times of 0 to 4 ms are exact).
	PercentileError float64 `json:"percentile_error"`
	// ErrorClasses and ClientClasses name the classes of ByClass: the first count in
	// Errors, the second are requests the client ended or the provider refused as the
	// client's mistake.
	ErrorClasses  []string      `json:"error_classes"`
	ClientClasses []string      `json:"client_classes"`
	Total         SeriesPoint   `json:"total"` // the whole range
	Points        []SeriesPoint `json:"points"`
}

// SeriesPoint is one step of a series (or the whole range, as Series.Total).
type SeriesPoint struct {
	T                 time.Time `json:"t"` // the step's start
	Requests          int64     `json:"requests"`
	RequestsPerSecond float64   `json:"requests_per_second"`
	Errors            int64     `json:"errors"`
	// ErrorRate is Errors / Requests; null without requests.
	ErrorRate        *float64         `json:"error_rate"`
	ByClass          map[string]int64 `json:"by_class"`
	PromptTokens     int64            `json:"prompt_tokens"`
	CompletionTokens int64            `json:"completion_tokens"`
	PriceMicroSEK    int64            `json:"price_micro_sek"`
	PriceSEK         string           `json:"price_sek"`
	DurationMS       Percentiles      `json:"duration_ms"`
	TTFTMS           Percentiles      `json:"ttft_ms"` // streams with a first event only
}

// Percentiles are the count of times measured and their 50th, 90th and 99th percentiles
// in milliseconds (null when none was measured).
type Percentiles struct {
	Count int64    `json:"count"`
	P50   *float64 `json:"p50"`
	P90   *float64 `json:"p90"`
	P99   *float64 `json:"p99"`
}
