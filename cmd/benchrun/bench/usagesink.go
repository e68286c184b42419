package bench

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

// newUsageSink is a control plane as the data plane sees it, for the data plane alone
// (DataplaneAlone): usage batches are confirmed at once, in this process, without touching
// the control plane or Postgres; everything else (snapshots, balance watches) is passed to
// the real control plane at cp, which then idles during the attacks. What the machine's
// control plane and Postgres add to the data plane's tail is the difference between the
// two data planes' figures.
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
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b := gjson.GetManyBytes(body, "batch_id", "records.#")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(usage.Reply{BatchID: b[0].String(), Inserted: int(b[1].Int()), Balances: []snapshot.Balance{}})
	})), nil
}
