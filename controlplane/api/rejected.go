package api

import (
	"net/http"
	"strconv"
	"time"
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
	type rejectedJSON struct {
		ID         int64     `json:"id"`
		RequestID  string    `json:"request_id"`
		AccountID  string    `json:"account_id"`
		NodeID     string    `json:"node_id"`
		BatchID    string    `json:"batch_id"`
		Reason     string    `json:"reason"`
		Record     string    `json:"record"`
		ReceivedAt time.Time `json:"received_at"`
	}
	out := struct {
		list[rejectedJSON]
		Total int64 `json:"total"`
	}{list[rejectedJSON]{Data: make([]rejectedJSON, len(recs))}, total}
	for i, x := range recs {
		out.Data[i] = rejectedJSON{x.ID, x.RequestID, x.AccountID, x.NodeID, x.BatchID, x.Reason, x.Raw, x.ReceivedAt.UTC()}
	}
	writeJSON(w, http.StatusOK, out)
}
