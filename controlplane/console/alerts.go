package console

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

// alertsView is the alerts page: the rules, the recent deliveries and a new rule's secret.
type alertsView struct {
	Rules      []adminapi.AlertRule
	Deliveries []adminapi.AlertDelivery
	Accounts   []adminapi.Account
	NewRule    *adminapi.AlertRule // just created: its secret is shown this once
}

func (c *Console) alertsPage(w http.ResponseWriter, r *http.Request, s *session) {
	p := page{Title: "Alerts", Nav: "alerts", Session: s}
	once, hasOnce := c.takeOnce(w, r, s)
	c.flash(w, r, &p)
	var v alertsView
	var rules adminapi.List[adminapi.AlertRule]
	if st, msg := c.api(r, s, http.MethodGet, "/admin/v1/alert-rules", nil, &rules); st != http.StatusOK {
		p.Error = msg
	}
	v.Rules = rules.Data
	var ds adminapi.List[adminapi.AlertDelivery]
	c.api(r, s, http.MethodGet, "/admin/v1/alert-deliveries?limit=50", nil, &ds)
	v.Deliveries = ds.Data
	var accts adminapi.List[adminapi.Account]
	c.api(r, s, http.MethodGet, "/admin/v1/accounts", nil, &accts)
	v.Accounts = accts.Data
	if hasOnce && once.alertRule != nil {
		v.NewRule = once.alertRule
		p.Notice = once.notice
	}
	p.Data = v
	c.render(w, http.StatusOK, "alerts", p)
}

// createAlert handles the alerts page's new rule form; the secret is shown once, after a
// redirect.
func (c *Console) createAlert(w http.ResponseWriter, r *http.Request, s *session) {
	const back = "/console/alerts"
	f := r.PostFormValue
	req := adminapi.CreateAlertRuleRequest{Name: f("name"), Kind: f("kind"), AccountID: f("account_id"), WebhookURL: f("webhook_url")}
	th, err := adminapi.ParseAlertThreshold(req.Kind, f("threshold"))
	if err != nil {
		c.failed(w, r, back, "Threshold: "+err.Error()+".")
		return
	}
	req.Threshold = th
	var rule adminapi.AlertRule
	if st, msg := c.api(r, s, http.MethodPost, "/admin/v1/alert-rules", req, &rule); st != http.StatusCreated {
		c.failed(w, r, back, msg)
		return
	}
	c.redirectOnce(w, r, s, back, onceAnswer{alertRule: &rule,
		notice: "Alert rule " + rule.ID + " created. Copy its signing secret now: it is not shown again."})
}

// alertAction handles a rule row's enable, disable and delete buttons.
func (c *Console) alertAction(w http.ResponseWriter, r *http.Request, s *session) {
	const back = "/console/alerts"
	path := "/admin/v1/alert-rules/" + url.PathEscape(r.PathValue("id"))
	var st int
	var msg, notice string
	switch a := r.PathValue("action"); a {
	case "enable", "disable":
		on := a == "enable"
		st, msg = c.api(r, s, http.MethodPatch, path, adminapi.PatchAlertRuleRequest{Enabled: &on}, nil)
		notice = "Alert rule " + r.PathValue("id") + " " + a + "d."
	case "delete":
		st, msg = c.api(r, s, http.MethodDelete, path, nil, nil)
		notice = "Alert rule " + r.PathValue("id") + " deleted."
	default:
		http.Error(w, "Unknown action.", http.StatusNotFound)
		return
	}
	if st != http.StatusOK {
		c.failed(w, r, back, msg)
		return
	}
	c.done(w, r, back, notice)
}

// deliveryStatus is a delivery's state with the last answer's status.
func deliveryStatus(d adminapi.AlertDelivery) string {
	s := d.State
	if d.LastStatus != 0 {
		s += " (" + strconv.Itoa(d.LastStatus) + ")"
	}
	return s
}
