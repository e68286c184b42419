package api

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/apikey"
	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/snapshot"
)

func (s *server) budgetRoutes(admin func(string, http.HandlerFunc)) {
	admin("GET /admin/v1/accounts/{id}/budgets", s.listBudgets)
	admin("PUT /admin/v1/accounts/{id}/budget", s.setBudget(false, true))
	admin("DELETE /admin/v1/accounts/{id}/budget", s.setBudget(false, false))
	admin("PUT /admin/v1/keys/{id}/budget", s.setBudget(true, true))
	admin("DELETE /admin/v1/keys/{id}/budget", s.setBudget(true, false))
}

func toBudgetJSON(b store.BudgetStatus) adminapi.Budget {
	return adminapi.Budget{AccountID: b.AccountID, KeyID: b.KeyID, KeyName: b.KeyName, Period: b.Budget.Period,
		LimitMicroSEK: b.Budget.LimitMicroSEK, LimitSEK: money.FormatSEK(b.Budget.LimitMicroSEK),
		SpentMicroSEK: b.SpentMicroSEK, SpentSEK: money.FormatSEK(b.SpentMicroSEK),
		PeriodStart: b.From, ResetsAt: b.Until}
}

// listBudgets is GET /admin/v1/accounts/{id}/budgets: the account's budget, then its
// keys', each with the spend of its current period.
func (s *server) listBudgets(w http.ResponseWriter, r *http.Request) {
	bs, err := s.cfg.Store.Budgets(r.Context(), r.PathValue("id"))
	if err != nil {
		s.storeError(w, r, err, "account")
		return
	}
	out := adminapi.List[adminapi.Budget]{Data: make([]adminapi.Budget, len(bs))}
	for i, b := range bs {
		out.Data[i] = toBudgetJSON(b)
	}
	writeJSON(w, http.StatusOK, out)
}

// setBudget is PUT (set) and DELETE (clear) of an account's or a key's budget.
func (s *server) setBudget(isKey, set bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		what := "account"
		if isKey {
			what = "key"
			if !apikey.ValidID(id) {
				writeError(w, notFound("key"))
				return
			}
		}
		var b *snapshot.Budget
		if set {
			var ok bool
			if b, ok = decodeBudget(w, r); !ok {
				return
			}
		}
		var err error
		if isKey {
			_, err = s.cfg.Store.SetKeyBudget(r.Context(), id, b)
		} else {
			_, err = s.cfg.Store.SetAccountBudget(r.Context(), id, b)
		}
		if err != nil {
			s.storeError(w, r, err, what)
			return
		}
		st, err := s.budgetState(r.Context(), isKey, id)
		if err != nil {
			s.storeError(w, r, err, what)
			return
		}
		writeJSON(w, http.StatusOK, st)
	}
}

// decodeBudget reads a SetBudgetRequest; it writes the 400 itself when the body is bad.
func decodeBudget(w http.ResponseWriter, r *http.Request) (*snapshot.Budget, bool) {
	var in struct {
		Period   string          `json:"period"`
		LimitSEK json.RawMessage `json:"limit_sek"`
	}
	if !decodeJSON(w, r, adminBodyLimit, &in) {
		return nil, false
	}
	if in.Period == "" {
		in.Period = snapshot.PeriodMonth
	}
	if !snapshot.ValidPeriod(in.Period) {
		writeError(w, invalid("period", "period must be one of day, week, month."))
		return nil, false
	}
	var limit string
	if err := json.Unmarshal(in.LimitSEK, &limit); err != nil {
		writeError(w, invalid("limit_sek", `limit_sek must be a decimal string such as "500.00".`))
		return nil, false
	}
	micro, err := money.ParseSEK(limit)
	if err != nil || micro <= 0 {
		writeError(w, invalid("limit_sek", `limit_sek must be a positive decimal string with at most 6 decimals, such as "500.00".`))
		return nil, false
	}
	return &snapshot.Budget{Period: in.Period, LimitMicroSEK: micro}, true
}

// budgetState is the account's (or key's) budget now, for a change's answer and the
// audit log's state before it.
func (s *server) budgetState(ctx context.Context, isKey bool, id string) (adminapi.BudgetState, error) {
	st := adminapi.BudgetState{AccountID: id}
	if isKey {
		k, err := s.cfg.Store.GetKey(ctx, id)
		if err != nil {
			return st, err
		}
		st.AccountID, st.KeyID = k.AccountID, k.ID
	}
	bs, err := s.cfg.Store.Budgets(ctx, st.AccountID)
	if err != nil {
		return st, err
	}
	for _, b := range bs {
		if b.KeyID == st.KeyID {
			j := toBudgetJSON(b)
			st.Budget = &j
		}
	}
	return st, nil
}
