package console

import (
	"net/http"
	"net/url"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

// AccountBudget is the account's own budget, or nil.
func (v accountView) AccountBudget() *adminapi.Budget {
	for i := range v.Budgets {
		if v.Budgets[i].KeyID == "" {
			return &v.Budgets[i]
		}
	}
	return nil
}

// KeyBudget is the budget of the account's key id, or nil.
func (v accountView) KeyBudget(id string) *adminapi.Budget {
	for i := range v.Budgets {
		if v.Budgets[i].KeyID == id {
			return &v.Budgets[i]
		}
	}
	return nil
}

// budgetRequest reads a budget form: nil when its clear button was pressed.
func budgetRequest(r *http.Request) *adminapi.SetBudgetRequest {
	if r.PostFormValue("clear") != "" {
		return nil
	}
	return &adminapi.SetBudgetRequest{Period: r.PostFormValue("period"), LimitSEK: normalizeAmount(r.PostFormValue("limit_sek"))}
}

// budgetNotice says what a budget form did.
func budgetNotice(what string, st adminapi.BudgetState) string {
	if st.Budget == nil {
		return "Budget of " + what + " removed."
	}
	return "Budget of " + what + " set: " + st.Budget.LimitSEK + " SEK per " + st.Budget.Period + " (" + st.Budget.SpentSEK + " SEK spent so far)."
}

// accountBudget handles the account page's budget form.
func (c *Console) accountBudget(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	back := "/console/accounts/" + url.PathEscape(id)
	_ = r.ParseForm()
	c.setBudget(w, r, s, "/admin/v1/accounts/"+url.PathEscape(id)+"/budget", back, "the account")
}

// keyBudget handles a key row's budget form.
func (c *Console) keyBudget(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	_ = r.ParseForm()
	back := "/console/accounts/" + url.PathEscape(r.PostForm.Get("account"))
	c.setBudget(w, r, s, "/admin/v1/keys/"+url.PathEscape(id)+"/budget", back, "key "+id)
}

func (c *Console) setBudget(w http.ResponseWriter, r *http.Request, s *session, path, back, what string) {
	req := budgetRequest(r)
	method := http.MethodPut
	var body any = req
	if req == nil {
		method, body = http.MethodDelete, nil
	}
	var st adminapi.BudgetState
	if code, msg := c.api(r, s, method, path, body, &st); code != http.StatusOK {
		c.failed(w, r, back, msg)
		return
	}
	c.done(w, r, back, budgetNotice(what, st))
}
