package console

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/snapshot"
)

// auditWords says an audit entry in words, as an operator would tell it: "demo credited
// Nordic Fintech AB 1,000.00 SEK: Invoice 2026-11". names maps account IDs to customer
// names (an account not in it is named by its ID). The raw route stays in the entry.
func auditWords(e adminapi.AuditEntry, names map[string]string) string {
	actor := strings.TrimPrefix(e.Actor, "operator:")
	switch e.Actor {
	case "token":
		actor = "The admin token (break-glass)"
	case "anonymous":
		actor = "Someone"
	}
	if e.Credential == adminapi.CredentialOperatorToken {
		actor += " (token " + e.TokenName + ")"
	}
	var req, after map[string]any
	_ = json.Unmarshal(e.Request, &req)
	_ = json.Unmarshal(e.After, &after)
	str := func(m map[string]any, k string) string {
		if v, ok := m[k].(string); ok {
			return v
		}
		return ""
	}
	account := names[e.Target]
	if account == "" {
		account = e.Target
	}
	amount := func(s string) string {
		neg := strings.HasPrefix(s, "-")
		micro, err := money.ParseSEK(strings.TrimPrefix(s, "-"))
		if err != nil {
			return s + " SEK"
		}
		if neg {
			micro = -micro
		}
		return displaySEK(micro) + " SEK"
	}
	reason := func(k string) string {
		if r := strings.TrimSpace(str(req, k)); r != "" {
			return ": " + r
		}
		return ""
	}
	var what string
	switch e.Action {
	case "POST /admin/v1/accounts":
		what = fmt.Sprintf("created the account %s (residency %s)", orDash(str(after, "customer"), str(req, "customer")), orDash(str(after, "residency"), str(req, "residency")))
	case "PATCH /admin/v1/accounts/{id}":
		var parts []string
		if v, ok := req["suspended"].(bool); ok {
			parts = append(parts, map[bool]string{true: "suspended", false: "resumed"}[v]+" "+account+reason("suspension_reason"))
		}
		if r := str(req, "residency"); r != "" {
			parts = append(parts, "set the residency of "+account+" to "+r)
		}
		if w, ok := req["queue_weight"].(float64); ok {
			parts = append(parts, fmt.Sprintf("set the queue weight of %s to %g", account, w))
		}
		if _, ok := req["limits"]; ok {
			parts = append(parts, limitsWords(e.Request, account))
		}
		if len(parts) == 0 {
			parts = []string{"changed " + account}
		}
		what = strings.Join(parts, " and ")
	case "POST /admin/v1/accounts/{id}/credits":
		what = "credited " + account + " " + amount(str(req, "amount_sek")) + reason("note")
	case "POST /admin/v1/accounts/{id}/adjustments":
		what = "adjusted the balance of " + account + " by " + amount(str(req, "amount_sek")) + reason("reason")
	case "POST /admin/v1/accounts/{id}/keys":
		what = "created the key " + orDash(str(after, "id"), "") + " for " + account
		if n := str(req, "name"); n != "" {
			what += " (" + n + ")"
		}
	case "POST /admin/v1/accounts/{id}/models":
		var ms []string
		if l, ok := req["models"].([]any); ok {
			for _, m := range l {
				if s, ok := m.(string); ok {
					ms = append(ms, s)
				}
			}
		}
		what = "enabled " + strings.Join(ms, ", ") + " for " + account
	case "DELETE /admin/v1/accounts/{id}/models/{model...}":
		what = "disabled a model for " + account
	case "POST /admin/v1/accounts/{id}/test-box":
		what = "sent a test-box request to " + orDash(str(req, "model"), "a model") + " for " + account
	case "POST /admin/v1/keys/{id}/revoke":
		what = "revoked the key " + e.Target
	case "PATCH /admin/v1/keys/{id}":
		what = limitsWords(e.Request, "the key "+e.Target)
	case "PUT /admin/v1/catalog":
		what = "loaded a catalogue"
		if n, ok := after["models"].(float64); ok {
			what += fmt.Sprintf(" of %d models and %v routes", int(n), after["routes"])
		}
	case "PATCH /admin/v1/models/{id}":
		what = "changed the prices of " + e.Target + changeWords(e, "input_ore_per_million_tokens", "output_ore_per_million_tokens")
	case "PATCH /admin/v1/routes/{id}":
		what = "changed the route " + e.Target + changeWords(e, "weight", "priority", "state")
	case "POST /admin/v1/operators":
		what = "added the operator " + orDash(str(req, "name"), e.Target) + " (" + str(req, "role") + ")"
	case "PATCH /admin/v1/operators/{name}":
		what = "changed the operator " + e.Target
		if r := str(req, "role"); r != "" {
			what += " to role " + r
		}
	case "POST /admin/v1/tokens":
		what = "made the API token " + orDash(str(after, "name"), str(req, "name")) + " (" + orDash(str(after, "role"), str(req, "role")) + ")"
		if o := str(req, "operator"); o != "" {
			what += " for " + o
		}
	case "POST /admin/v1/tokens/{id}/revoke":
		var before map[string]any
		_ = json.Unmarshal(e.Before, &before)
		what = "revoked the API token " + orDash(str(before, "name"), e.Target) + " of " + orDash(str(before, "operator"), "?")
	case "POST /admin/v1/sessions/oidc":
		if e.Status >= 400 {
			who := ""
			if em := str(req, "email"); em != "" {
				who = " of " + em
			}
			return "Refused sign-in through OIDC" + who + fmt.Sprintf(" (%d)", e.Status)
		}
		what = "signed in through OIDC as a new operator (" + str(after, "role") + ")"
		if len(e.Before) > 0 && string(e.Before) != "null" {
			what = "signed in through OIDC; the provider changed the role to " + str(after, "role")
		}
	case "POST /admin/v1/signups/{id}/approve":
		what = "approved the signup " + e.Target
	case "POST /admin/v1/signups/{id}/reject":
		what = "rejected the signup " + e.Target
	case "POST /admin/v1/sessions":
		if e.Status >= 400 {
			return "Failed login as " + orDash(str(req, "name"), "an unknown operator") + " from " + strings.TrimPrefix(e.Target, "client:") + fmt.Sprintf(" (%d)", e.Status)
		}
		what = "logged in"
	default:
		what = e.Action
		if e.Target != "" {
			what += " on " + e.Target
		}
	}
	if e.Status >= 400 {
		return actor + " tried: " + what + fmt.Sprintf(" (refused, %d)", e.Status)
	}
	return actor + " " + what
}

func orDash(a, b string) string {
	if a != "" {
		return a
	}
	if b != "" {
		return b
	}
	return "—"
}

// limitsWords says what a PATCH's "limits" did to whose ("set the limits of X to 10 rps").
func limitsWords(request json.RawMessage, whose string) string {
	var in struct {
		Limits *snapshot.Limits `json:"limits"`
	}
	if json.Unmarshal(request, &in) != nil {
		return "changed the limits of " + whose
	}
	if in.Limits == nil {
		return "cleared the limits of " + whose
	}
	return "set the limits of " + whose + " to " + adminapi.LimitsText(*in.Limits)
}
