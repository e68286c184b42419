package api

import (
	"net/http"
	"strconv"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

// listRejected answers GET /admin/v1/rejected-records?limit=N (default 100, at most 1000):
// the usage records the control plane refused, newest first, with the reason and the
// record as the node sent it, and total, the count of all of them.
func (s *server) listRejected(w http.ResponseWriter, r *http.Request) {
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, invalid("limit", "limit must be a whole number from 1 to 1000."))
			return
		}
		limit = n
	}
	recs, total, err := s.cfg.Store.ListRejected(r.Context(), limit)
	if err != nil {
		s.storeError(w, r, err, "rejected records")
		return
	}
	out := adminapi.RejectedRecords{Data: make([]adminapi.RejectedRecord, len(recs)), Total: total}
	for i, x := range recs {
		out.Data[i] = adminapi.RejectedRecord{ID: x.ID, RequestID: x.RequestID, AccountID: x.AccountID, NodeID: x.NodeID,
			BatchID: x.BatchID, Reason: x.Reason, Record: x.Raw, ReceivedAt: x.ReceivedAt.UTC()}
	}
	writeJSON(w, http.StatusOK, out)
}
