package benchrun

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"

	"github.com/sekgate/gateway/shared/internalapi"
)

// newUsageSink is a control plane as the data plane sees it, for the data plane alone
// (DataplaneAlone): usage batches are refused at once (503, the body unread), so the node
// keeps its records in its spool and retries with its backoff (up to 15 s apart), and
// nothing on the machine ingests them; everything else (snapshots, balance watches) is
// passed to the real control plane at cp, which then idles during the attacks. What the
// usage ingest beside a node (the node's batch exchange, the control plane and Postgres on
// the same cores) adds to its tail is the difference between the two data planes' figures.
//
// An earlier sink confirmed the batches in this process, the load generator's: its work
// on each batch then delayed the load generator's own timing, and the alone figures
// matched the default's.
func newUsageSink(cp string) (*httptest.Server, error) {
	target, err := url.Parse(cp)
	if err != nil {
		return nil, err
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != internalapi.PathUsage {
			proxy.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close") // the body stays unread
		w.Header().Set("Retry-After", "15")
		http.Error(w, `{"error":{"type":"unavailable","message":"usage is kept in the spool during this benchmark"}}`, http.StatusServiceUnavailable)
	})), nil
}
