package conformance

import (
	"encoding/json"
	"strings"
	"testing"
)

// Spend budgets end to end: a key's budget set through the admin API reaches the node in
// the snapshot, its spend comes back with the balances, and once it is used up the node
// answers 402 budget_exceeded naming the budget and its reset, while the account's other
// key goes on; the account's budget stops both; clearing it lets them through again.
func TestErrors_402_BudgetExceeded(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 100, modelChat)
	b := s.NewKey(t, a.ID, nil)
	chat := func(key string) Response {
		return s.Post(t, "/v1/chat/completions", key, chatReq(modelChat, "max_tokens", 4))
	}
	refused := func(key, whose string) func() bool {
		return func() bool {
			r := chat(key)
			if r.Status != 402 {
				return false
			}
			var e envelope
			_ = json.Unmarshal(r.Body, &e)
			return e.Error.Type == "insufficient_quota" && e.Error.Code != nil && *e.Error.Code == "budget_exceeded" &&
				strings.Contains(e.Error.Message, whose) && strings.Contains(e.Error.Message, "resets at")
		}
	}

	s.Admin(t, "PUT", "/admin/v1/keys/"+a.KeyID+"/budget", map[string]any{"period": "day", "limit_sek": "0.000001"})
	s.waitFor(t, "the key's budget refused", refused(a.Key, "this API key's ("+a.KeyID+")"))
	if r := chat(b.Key); r.Status != 200 {
		t.Fatalf("the account's other key: %d %s", r.Status, r.Body)
	}
	st := s.Admin(t, "GET", "/admin/v1/accounts/"+a.ID+"/budgets", nil)
	if data, _ := st["data"].([]any); len(data) != 1 {
		t.Fatalf("budgets %v", st)
	}

	s.Admin(t, "PUT", "/admin/v1/accounts/"+a.ID+"/budget", map[string]any{"limit_sek": "0.000001"})
	s.waitFor(t, "the account's budget refused", refused(b.Key, "the account's budget"))

	s.Admin(t, "DELETE", "/admin/v1/accounts/"+a.ID+"/budget", nil)
	s.Admin(t, "DELETE", "/admin/v1/keys/"+a.KeyID+"/budget", nil)
	s.waitFor(t, "requests admitted again", func() bool { return chat(a.Key).Status == 200 && chat(b.Key).Status == 200 })
}
