package api

import (
	"context"
	"net/http"
	"net/url"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/controlplane/store"
)

func (s *server) alertRoutes(admin func(string, http.HandlerFunc)) {
	admin("GET /admin/v1/alert-rules", s.listAlertRules)
	admin("POST /admin/v1/alert-rules", s.createAlertRule)
	admin("PATCH /admin/v1/alert-rules/{id}", s.patchAlertRule)
	admin("DELETE /admin/v1/alert-rules/{id}", s.deleteAlertRule)
	admin("GET /admin/v1/alert-deliveries", s.listAlertDeliveries)
}

func toAlertRuleJSON(r store.AlertRule) adminapi.AlertRule {
	return adminapi.AlertRule{ID: r.ID, Name: r.Name, Kind: r.Kind, AccountID: r.AccountID, Threshold: r.Threshold,
		WebhookURL: r.WebhookURL, Enabled: r.Enabled, CreatedAt: r.CreatedAt, Firing: r.Firing}
}

func (s *server) listAlertRules(w http.ResponseWriter, r *http.Request) {
	rules, err := s.cfg.Store.ListAlertRules(r.Context())
	if err != nil {
		s.storeError(w, r, err, "alert rules")
		return
	}
	out := adminapi.List[adminapi.AlertRule]{Data: make([]adminapi.AlertRule, len(rules))}
	for i, rl := range rules {
		out.Data[i] = toAlertRuleJSON(rl)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) createAlertRule(w http.ResponseWriter, r *http.Request) {
	var in adminapi.CreateAlertRuleRequest
	if !decodeJSON(w, r, adminBodyLimit, &in) {
		return
	}
	if param, msg := checkAlertRule(in); param != "" {
		writeError(w, invalid(param, "%s", msg))
		return
	}
	rule, err := s.cfg.Store.CreateAlertRule(r.Context(), store.AlertRule{Name: in.Name, Kind: in.Kind, AccountID: in.AccountID,
		Threshold: in.Threshold, WebhookURL: in.WebhookURL})
	if err != nil {
		s.storeError(w, r, err, "account")
		return
	}
	out := toAlertRuleJSON(rule)
	out.Secret = rule.Secret
	writeJSON(w, http.StatusCreated, out)
}

// checkAlertRule returns the parameter at fault and why, or "" when in is a usable rule.
func checkAlertRule(in adminapi.CreateAlertRuleRequest) (param, msg string) {
	if in.Name == "" || !validText(in.Name, 200) {
		return "name", "name must be 1 to 200 characters."
	}
	if u, err := url.Parse(in.WebhookURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(in.WebhookURL) > 2000 {
		return "webhook_url", "webhook_url must be an http or https URL of at most 2000 characters."
	}
	account := in.Kind == store.AlertBalanceBelow || in.Kind == store.AlertBudgetUsedAbove
	if in.AccountID != "" && !account {
		return "account_id", "account_id goes with balance_below and budget_used_above rules only."
	}
	switch in.Kind {
	case store.AlertBalanceBelow:
		if in.Threshold < 0 {
			return "threshold", "threshold of balance_below is a balance in micro-SEK, 0 or more."
		}
	case store.AlertBudgetUsedAbove:
		if in.Threshold < 1 || in.Threshold > 1000 {
			return "threshold", "threshold of budget_used_above is a percentage of the budget, 1 to 1000."
		}
	case store.AlertSpoolAgeAbove, store.AlertNodeSilent:
		if in.Threshold < 1000 {
			return "threshold", "threshold of " + in.Kind + " is a duration in milliseconds, at least 1000."
		}
	case store.AlertRouteProblem:
		if in.Threshold != 0 {
			return "threshold", "route_problem takes no threshold."
		}
	default:
		return "kind", "kind must be one of balance_below, budget_used_above, route_problem, spool_age_above, node_silent."
	}
	return "", ""
}

func (s *server) patchAlertRule(w http.ResponseWriter, r *http.Request) {
	var in adminapi.PatchAlertRuleRequest
	if !decodeJSON(w, r, adminBodyLimit, &in) {
		return
	}
	if in.Enabled == nil {
		writeError(w, invalid("enabled", "enabled (true or false) is required."))
		return
	}
	rule, err := s.cfg.Store.SetAlertRuleEnabled(r.Context(), r.PathValue("id"), *in.Enabled)
	if err != nil {
		s.storeError(w, r, err, "alert rule")
		return
	}
	writeJSON(w, http.StatusOK, toAlertRuleJSON(rule))
}

func (s *server) deleteAlertRule(w http.ResponseWriter, r *http.Request) {
	rule, err := s.cfg.Store.GetAlertRule(r.Context(), r.PathValue("id"))
	if err == nil {
		err = s.cfg.Store.DeleteAlertRule(r.Context(), rule.ID)
	}
	if err != nil {
		s.storeError(w, r, err, "alert rule")
		return
	}
	writeJSON(w, http.StatusOK, toAlertRuleJSON(rule))
}

// listAlertDeliveries is GET /admin/v1/alert-deliveries?rule=&limit=, newest first.
func (s *server) listAlertDeliveries(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, ok := pageLimit(w, q.Get("limit"))
	if !ok {
		return
	}
	ds, err := s.cfg.Store.ListAlertDeliveries(r.Context(), q.Get("rule"), limit)
	if err != nil {
		s.storeError(w, r, err, "alert deliveries")
		return
	}
	out := adminapi.List[adminapi.AlertDelivery]{Data: make([]adminapi.AlertDelivery, len(ds))}
	for i, d := range ds {
		out.Data[i] = adminapi.AlertDelivery{ID: d.ID, RuleID: d.RuleID, RuleName: d.RuleName, Subject: d.Subject, Event: d.Event,
			State: d.State, Attempts: d.Attempts, LastStatus: d.LastStatus, LastError: d.LastError, CreatedAt: d.CreatedAt,
			DeliveredAt: d.DeliveredAt, Payload: d.Payload}
		if d.State == store.DeliveryPending {
			t := d.NextAttemptAt
			out.Data[i].NextAttemptAt = &t
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// alertRuleState is a rule as the audit log keeps it before a change.
func (s *server) alertRuleState(ctx context.Context, id string) any {
	rule, err := s.cfg.Store.GetAlertRule(ctx, id)
	if err != nil {
		return nil
	}
	return toAlertRuleJSON(rule)
}
