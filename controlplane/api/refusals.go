package api

import (
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/internalapi"
)

// refusalsBodyLimit bounds a node's refusal report (MaxRefusalEntries short entries).
const refusalsBodyLimit = 4 << 20

// postRefusals is POST /internal/v1/refusals: a node's counts of the requests it refused
// before routing. Entries that do not make sense are refused with the report (400).
func (s *server) postRefusals(w http.ResponseWriter, r *http.Request) {
	var rep internalapi.RefusalReport
	if !decodeJSON(w, r, refusalsBodyLimit, &rep) {
		return
	}
	if len(rep.Entries) > internalapi.MaxRefusalEntries {
		writeError(w, invalid("entries", "at most %d entries per report", internalapi.MaxRefusalEntries))
		return
	}
	for _, e := range rep.Entries {
		if _, err := time.Parse(time.DateOnly, e.Day); err != nil || e.AccountID == "" || len(e.AccountID) > 200 ||
			len(e.KeyID) > 200 || len(e.Code) > 100 || !utf8.ValidString(e.AccountID+e.KeyID+e.Code) ||
			e.Status < 400 || e.Status > 599 || e.Count < 1 {
			writeError(w, invalid("entries", "each entry needs a YYYY-MM-DD day, an account ID, a 4xx or 5xx status and a positive count"))
			return
		}
	}
	if err := s.cfg.Store.AddRefusals(r.Context(), rep.Entries); err != nil {
		s.storeError(w, r, err, "refusals")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// listRefusals is GET /admin/v1/accounts/{id}/refusals?days=N (default 7, at most 366): the
// requests of the account that nodes refused before routing, per day, key, status and code.
func (s *server) listRefusals(w http.ResponseWriter, r *http.Request) {
	id, days, ok := s.accountDays(w, r, 7)
	if !ok {
		return
	}
	rows, err := s.cfg.Store.ListRefusals(r.Context(), id, s.now().AddDate(0, 0, 1-days))
	if err != nil {
		s.storeError(w, r, err, "refusals")
		return
	}
	out := adminapi.RefusalReport{Days: days, Data: make([]adminapi.Refusal, len(rows))}
	for i, x := range rows {
		out.Data[i] = adminapi.Refusal{Day: x.Day.Format(time.DateOnly), KeyID: x.KeyID, Status: x.Status, Code: x.Code, Count: x.Count}
		out.Total += x.Count
	}
	writeJSON(w, http.StatusOK, out)
}
