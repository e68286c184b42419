package adminapi

import (
	"encoding/json"
	"time"
)

// AlertRule is an alert rule as the admin API shows it. Threshold is in micro-SEK for
// balance_below, percent for budget_used_above and milliseconds for spool_age_above and
// node_silent; route_problem has none.
type AlertRule struct {
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	Kind       string    `json:"kind"`
	AccountID  string    `json:"account_id,omitempty"`
	Threshold  int64     `json:"threshold"`
	WebhookURL string    `json:"webhook_url"`
	Enabled    bool      `json:"enabled"`
	CreatedAt  time.Time `json:"created_at"`
	// Firing counts the subjects the rule's condition holds for now.
	Firing int `json:"firing"`
	// Secret signs the rule's deliveries (alerts.Sign); only the answer to its creation
	// shows it.
	Secret string `json:"secret,omitempty"`
}

// CreateAlertRuleRequest is the body of POST /admin/v1/alert-rules.
type CreateAlertRuleRequest struct {
	Name       string `json:"name"`
	Kind       string `json:"kind"`
	AccountID  string `json:"account_id,omitempty"`
	Threshold  int64  `json:"threshold,omitempty"`
	WebhookURL string `json:"webhook_url"`
}

// PatchAlertRuleRequest is the body of PATCH /admin/v1/alert-rules/{id}.
type PatchAlertRuleRequest struct {
	Enabled *bool `json:"enabled,omitempty"`
}

// AlertDelivery is one event of a rule and how its delivery to the webhook went.
type AlertDelivery struct {
	ID            int64           `json:"id"`
	RuleID        string          `json:"rule_id"`
	RuleName      string          `json:"rule_name"`
	Subject       string          `json:"subject"`
	Event         string          `json:"event"`
	State         string          `json:"state"` // pending, delivered or failed
	Attempts      int             `json:"attempts"`
	LastStatus    int             `json:"last_status,omitempty"`
	LastError     string          `json:"last_error,omitempty"`
	CreatedAt     time.Time       `json:"created_at"`
	NextAttemptAt *time.Time      `json:"next_attempt_at,omitempty"`
	DeliveredAt   *time.Time      `json:"delivered_at,omitempty"`
	Payload       json.RawMessage `json:"payload"`
}
