package adminapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sekgate/gateway/shared/money"
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

// ParseAlertThreshold reads a threshold as a person gives it for a rule of kind (SEK such
// as 12.50 for balance_below, a percentage such as 80 for budget_used_above, a duration
// such as 5m for spool_age_above and node_silent, nothing for route_problem) into the
// API's unit.
func ParseAlertThreshold(kind, v string) (int64, error) {
	v = strings.TrimSpace(v)
	switch kind {
	case "balance_below":
		micro, err := money.ParseSEK(v)
		if err != nil || micro < 0 {
			return 0, errors.New("a balance_below rule takes an amount of SEK such as 50 or 12.50")
		}
		return micro, nil
	case "budget_used_above":
		n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(v, "%")), 10, 64)
		if err != nil || n < 1 || n > 1000 {
			return 0, errors.New("a budget_used_above rule takes a percentage, 1 to 1000, such as 80")
		}
		return n, nil
	case "spool_age_above", "node_silent":
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			return 0, fmt.Errorf("a %s rule takes a duration of at least 1s, such as 5m or 90s", kind)
		}
		return d.Milliseconds(), nil
	case "route_problem":
		if v != "" {
			return 0, errors.New("a route_problem rule takes no threshold")
		}
		return 0, nil
	}
	return 0, fmt.Errorf("kind %q: want balance_below, budget_used_above, route_problem, spool_age_above or node_silent", kind)
}

// ThresholdText is the rule's threshold in the unit of its kind.
func (r AlertRule) ThresholdText() string {
	switch r.Kind {
	case "balance_below":
		return money.FormatSEK(r.Threshold) + " SEK"
	case "budget_used_above":
		return strconv.FormatInt(r.Threshold, 10) + "%"
	case "spool_age_above", "node_silent":
		return (time.Duration(r.Threshold) * time.Millisecond).String()
	}
	return "-"
}

// ValidAlertKind reports whether k names a kind of alert rule.
func ValidAlertKind(k string) bool {
	switch k {
	case "balance_below", "budget_used_above", "route_problem", "spool_age_above", "node_silent":
		return true
	}
	return false
}
