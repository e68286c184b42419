package simulator

import (
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"
)

// Counter indexes of the known paths.
const (
	pathChat = iota
	pathCompletions
	pathEmbeddings
	pathResponses
	pathMessages
	pathSystemOne
	pathModels
	pathHealthz
	pathOther
	numPaths
)

var pathNames = [numPaths]string{
	"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses",
	"/v1/messages", "/v1/systemone", "/v1/models", "/healthz", "other",
}

// Stats are the simulator's counters since start (or the last ResetStats).
type Stats struct {
	Name string `json:"name"`
	// Requests counts every request except /sim/*, /healthz, /metrics and model listings:
	// what a gateway probes a server with (its health, load and route checks) is not a
	// request it forwarded. ByPath counts the probes too.
	Requests int64 `json:"requests"`
	// ByPath counts requests per path ("other" for unknown paths); zero entries are omitted.
	ByPath map[string]int64 `json:"by_path"`
	// InFlight is the number of inference requests being answered now.
	InFlight int64 `json:"in_flight"`
	// Completed counts inference requests answered in full (terminal event sent for streams).
	Completed int64 `json:"completed"`
	// Cancelled counts inference requests whose client went away before the answer was
	// complete (observed as context cancellation while waiting, or a failed write).
	Cancelled int64 `json:"cancelled"`
	// Streams counts streaming inference requests.
	Streams int64 `json:"streams"`
	// Injected counts answers shaped by fault knobs: error statuses, dropped connections,
	// broken streams, malformed bodies.
	Injected int64 `json:"injected"`
	// BadRequests counts requests refused with 400 (invalid JSON or fields).
	BadRequests int64 `json:"bad_requests"`
}

type counters struct {
	requests  atomic.Int64
	byPath    [numPaths]atomic.Int64
	inFlight  atomic.Int64
	completed atomic.Int64
	cancelled atomic.Int64
	streams   atomic.Int64
	injected  atomic.Int64
	bad       atomic.Int64
}

func (c *counters) count(idx int) {
	if idx != pathModels && idx != pathHealthz { // probes, not requests: see Stats.Requests
		c.requests.Add(1)
	}
	c.byPath[idx].Add(1)
}

func (c *counters) reset() {
	c.requests.Store(0)
	for i := range c.byPath {
		c.byPath[i].Store(0)
	}
	c.completed.Store(0)
	c.cancelled.Store(0)
	c.streams.Store(0)
	c.injected.Store(0)
	c.bad.Store(0)
	// in-flight is a gauge, not reset.
}

// Stats returns a copy of the counters.
func (s *Server) Stats() Stats {
	st := Stats{
		Name:        s.cfg.Name,
		Requests:    s.stats.requests.Load(),
		ByPath:      make(map[string]int64, numPaths),
		InFlight:    s.stats.inFlight.Load(),
		Completed:   s.stats.completed.Load(),
		Cancelled:   s.stats.cancelled.Load(),
		Streams:     s.stats.streams.Load(),
		Injected:    s.stats.injected.Load(),
		BadRequests: s.stats.bad.Load(),
	}
	for i := range s.stats.byPath {
		if n := s.stats.byPath[i].Load(); n > 0 {
			st.ByPath[pathNames[i]] = n
		}
	}
	return st
}

// ResetStats zeroes the counters (except the in-flight gauge).
func (s *Server) ResetStats() { s.stats.reset() }

// serveStats answers GET /sim/stats with Stats as JSON; DELETE or POST resets the counters.
func (s *Server) serveStats(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodDelete, http.MethodPost:
		s.ResetStats()
	default:
		w.Header().Set("Allow", "GET, DELETE, POST")
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method not allowed", false)
		return
	}
	writeJSONValue(w, s.Stats())
}

// serveConfig answers GET /sim/config with the server-wide Knobs; PUT replaces them with the
// JSON body's (fields left out become zero, i.e. defaults).
func (s *Server) serveConfig(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodPut:
		var k Knobs
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err == nil {
			err = json.Unmarshal(body, &k)
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "bad knobs: "+err.Error(), false)
			return
		}
		s.SetKnobs(k)
	default:
		w.Header().Set("Allow", "GET, PUT")
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method not allowed", false)
		return
	}
	writeJSONValue(w, s.Knobs())
}

func writeJSONValue(w http.ResponseWriter, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		writeError(w, http.StatusInternalServerError, "api_error", err.Error(), false)
		return
	}
	w.Header()["Content-Type"] = ctJSON
	w.Write(append(b, '\n'))
}
