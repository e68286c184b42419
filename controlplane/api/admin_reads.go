package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/apikey"
	"github.com/sekgate/gateway/shared/money"
)

// operatorRoutes are the admin routes of operators, sessions, the audit log and the
// account views of the console.
func (s *server) operatorRoutes(admin func(string, http.HandlerFunc)) {
	admin("GET /admin/v1/sessions/current", s.currentSession)
	admin("DELETE /admin/v1/sessions/current", s.logout)
	admin("POST /admin/v1/operators", s.createOperator)
	admin("GET /admin/v1/operators", s.listOperators)
	admin("PATCH /admin/v1/operators/{name}", s.patchOperator)
	s.tokenRoutes(admin)
	admin("GET /admin/v1/audit", s.listAudit)
	admin("GET /admin/v1/accounts/{id}/ledger", s.listLedger)
	admin("GET /admin/v1/accounts/{id}/usage", s.accountUsage)
	admin("POST /admin/v1/accounts/{id}/adjustments", s.addAdjustment)
	admin("GET /admin/v1/records", s.listAllRecords)
	admin("GET /admin/v1/records/{id}", s.getAnyRecord)
	if s.cfg.TestBox != nil {
		admin("POST /admin/v1/accounts/{id}/test-box", s.testBox)
	}
}

// listLedger is GET /admin/v1/accounts/{id}/ledger?before=&limit=.
func (s *server) listLedger(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, before, ok := beforePage(w, q)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if _, err := s.cfg.Store.GetAccount(r.Context(), id); err != nil {
		s.storeError(w, r, err, "account")
		return
	}
	es, err := s.cfg.Store.ListLedger(r.Context(), store.LedgerQuery{AccountID: id, Before: before, Limit: limit})
	if err != nil {
		s.storeError(w, r, err, "account")
		return
	}
	out := adminapi.LedgerPage{Data: make([]adminapi.LedgerEntry, len(es))}
	for i, e := range es {
		out.Data[i] = adminapi.LedgerEntry{ID: e.ID, Kind: e.Kind, AmountMicroSEK: e.AmountMicroSEK, AmountSEK: money.FormatSEK(e.AmountMicroSEK),
			Reference: e.Reference, Note: e.Note, CreatedAt: e.CreatedAt}
	}
	if len(es) == limit {
		next := es[len(es)-1].ID
		out.NextBefore = &next
	}
	writeJSON(w, http.StatusOK, out)
}

// accountDays reads an account report's account (which must exist) and its days query
// parameter (1 to 366, def when absent); ok is false when it answered an error.
func (s *server) accountDays(w http.ResponseWriter, r *http.Request, def int) (id string, days int, ok bool) {
	days = def
	if v := r.URL.Query().Get("days"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 366 {
			writeError(w, invalid("days", "days must be an integer from 1 to 366."))
			return "", 0, false
		}
		days = n
	}
	id = r.PathValue("id")
	if _, err := s.cfg.Store.GetAccount(r.Context(), id); err != nil {
		s.storeError(w, r, err, "account")
		return "", 0, false
	}
	return id, days, true
}

// accountUsage is GET /admin/v1/accounts/{id}/usage?days=1..366 (default 30): usage per
// day and model, today (UTC) included.
func (s *server) accountUsage(w http.ResponseWriter, r *http.Request) {
	id, days, ok := s.accountDays(w, r, 30)
	if !ok {
		return
	}
	from := s.now().UTC().AddDate(0, 0, -(days - 1))
	us, err := s.cfg.Store.UsageByDay(r.Context(), id, from)
	if err != nil {
		s.storeError(w, r, err, "account")
		return
	}
	out := adminapi.UsageReport{Days: days, Data: make([]adminapi.DailyUsage, len(us))}
	for i, u := range us {
		out.Data[i] = adminapi.DailyUsage{Day: u.Day, Model: u.Model, Requests: u.Requests, PromptTokens: u.PromptTokens,
			CompletionTokens: u.CompletionTokens, PriceMicroSEK: u.PriceMicroSEK, PriceSEK: money.FormatSEK(u.PriceMicroSEK)}
		out.PriceMicroSEK += u.PriceMicroSEK
	}
	out.PriceSEK = money.FormatSEK(out.PriceMicroSEK)
	writeJSON(w, http.StatusOK, out)
}

// addAdjustment is POST /admin/v1/accounts/{id}/adjustments {amount_sek, reason}.
func (s *server) addAdjustment(w http.ResponseWriter, r *http.Request) {
	var in struct {
		AmountSEK json.RawMessage `json:"amount_sek"`
		Reason    string          `json:"reason"`
	}
	if !decodeJSON(w, r, adminBodyLimit, &in) {
		return
	}
	var amountStr string
	if err := json.Unmarshal(in.AmountSEK, &amountStr); err != nil {
		writeError(w, invalid("amount_sek", `amount_sek must be a signed decimal string such as "-12.50".`))
		return
	}
	neg := strings.HasPrefix(amountStr, "-")
	micro, err := money.ParseSEK(strings.TrimPrefix(amountStr, "-"))
	if err != nil || micro <= 0 {
		writeError(w, invalid("amount_sek", `amount_sek must be a non-zero decimal string with at most 6 decimals, such as "-12.50".`))
		return
	}
	if neg {
		micro = -micro
	}
	in.Reason = strings.TrimSpace(in.Reason)
	if in.Reason == "" || !validText(in.Reason, 1000) {
		writeError(w, invalid("reason", "reason is required (at most 1000 characters)."))
		return
	}
	res, err := s.cfg.Store.AddAdjustment(r.Context(), r.PathValue("id"), micro, in.Reason)
	if err != nil {
		s.storeError(w, r, err, "account")
		return
	}
	applied := true
	writeJSON(w, http.StatusOK, adminapi.Credit{EntryID: res.Entry.ID, Applied: &applied,
		BalanceMicroSEK: res.BalanceMicroSEK, BalanceSEK: money.FormatSEK(res.BalanceMicroSEK)})
}

// listAllRecords is GET /admin/v1/records: request records of any account, newest first,
// filtered by account_id, key_id (or key_id=none for test-box records), model, result,
// output_underreported=true (the provider reported less output than it delivered) and a
// time range from (inclusive) to (exclusive), RFC 3339; after continues a listing.
func (s *server) listAllRecords(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, ok := pageLimit(w, q.Get("limit"))
	if !ok {
		return
	}
	rq := store.OperatorRecordQuery{AccountID: q.Get("account_id"), Model: q.Get("model"), Result: q.Get("result"), Limit: limit}
	switch q.Get("output_underreported") {
	case "", "false":
	case "true":
		rq.Underreported = true
	default:
		writeError(w, invalid("output_underreported", "output_underreported must be true or false."))
		return
	}
	switch k := q.Get("key_id"); {
	case k == "none":
		rq.TestBox = true
	case k != "" && !apikey.ValidID(k):
		writeError(w, invalid("key_id", "key_id must be a key ID (key_ followed by 12 hex digits) or none."))
		return
	default:
		rq.KeyID = k
	}
	for _, f := range []struct {
		param string
		dst   *time.Time
	}{{"from", &rq.From}, {"to", &rq.To}} {
		if v := q.Get(f.param); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				writeError(w, invalid(f.param, "%s must be an RFC 3339 time such as 2026-11-24T00:00:00Z.", f.param))
				return
			}
			*f.dst = t
		}
	}
	if c := q.Get("after"); c != "" {
		pos, ok := decodeCursor(c)
		if !ok {
			writeError(w, invalid("after", "after must be a next_cursor from a previous page."))
			return
		}
		rq.After = pos
	}
	recs, err := s.cfg.Store.ListRecordsForOperator(r.Context(), rq)
	if err != nil {
		s.storeError(w, r, err, "records")
		return
	}
	out := adminapi.RecordPage{Data: recs}
	if len(recs) == limit {
		out.NextCursor = encodeCursor(recs[limit-1])
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) getAnyRecord(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !store.ValidRequestID(id) {
		writeError(w, notFound("record"))
		return
	}
	rec, err := s.cfg.Store.GetRecordForOperator(r.Context(), id)
	if err != nil {
		s.storeError(w, r, err, "record")
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

// searchAccounts is GET /admin/v1/accounts with q (the exact account ID or part of the
// customer name), limit and after (next_after of the previous page): a page by account ID.
func (s *server) searchAccounts(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, ok := pageLimit(w, q.Get("limit"))
	if !ok {
		return
	}
	text := strings.TrimSpace(q.Get("q"))
	if !validText(text, 200) {
		writeError(w, invalid("q", "q must be at most 200 characters."))
		return
	}
	accts, err := s.cfg.Store.SearchAccounts(r.Context(), store.AccountQuery{Q: text, After: q.Get("after"), Limit: limit})
	if err != nil {
		s.storeError(w, r, err, "accounts")
		return
	}
	out := adminapi.AccountPage{Data: make([]adminapi.Account, len(accts))}
	for i, a := range accts {
		out.Data[i] = s.accountJSON(a)
	}
	if len(accts) == limit {
		out.NextAfter = accts[len(accts)-1].ID
	}
	writeJSON(w, http.StatusOK, out)
}
