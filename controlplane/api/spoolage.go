package api

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/sekgate/gateway/shared/internalapi"
)

// spoolReportEvery is the most often a node's spool age reported with usage batches and
// balance polls is written (snapshot polls always write it, with the rest of the poll).
const spoolReportEvery = time.Second

// spoolReports throttles the spool-age writes of usage batches and balance polls per node.
type spoolReports struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// spoolAge reads the node's HeaderSpoolAge: the age and true, or -1 and false when the
// header is absent or not a whole number of milliseconds (the bookkeeping is skipped, the
// request is served).
func spoolAge(r *http.Request) (time.Duration, bool) {
	if d, ok := internalapi.ParseSpoolAge(r.Header.Get(internalapi.HeaderSpoolAge)); ok {
		return d, true
	}
	return -1, false
}

// reportSpoolAge stores the spool age a node sent with a usage batch or balance poll, at
// most once per spoolReportEvery per node. Failures are logged: serving matters more.
func (s *server) reportSpoolAge(ctx context.Context, r *http.Request, node string) {
	age, ok := spoolAge(r)
	if !ok || node == "" {
		return
	}
	now := s.now()
	s.spool.mu.Lock()
	if s.spool.last == nil {
		s.spool.last = map[string]time.Time{}
	}
	if t, seen := s.spool.last[node]; seen && now.Sub(t) < spoolReportEvery && now.After(t) {
		s.spool.mu.Unlock()
		return
	}
	s.spool.last[node] = now
	s.spool.mu.Unlock()
	if err := s.cfg.Store.ReportSpoolAge(ctx, node, age); err != nil {
		s.log.Warn("record node spool age", "node", node, "err", err)
	}
}
