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
	l := &auditLine{e: e, account: names[e.Target]}
	_ = json.Unmarshal(e.Request, &l.req)
	_ = json.Unmarshal(e.After, &l.after)
	if l.account == "" {
		l.account = e.Target
	}
	var what string
	if words, ok := actionWords[e.Action]; ok {
		var whole bool
		if what, whole = words(l); whole {
			return what
		}
	} else {
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

// auditLine is what an audit entry's words are made from.
type auditLine struct {
	e          adminapi.AuditEntry
	req, after map[string]any
	account    string // the target account's customer name, or the target
}

// str is m's string member k, or "".
func str(m map[string]any, k string) string {
	if v, ok := m[k].(string); ok {
		return v
	}
	return ""
}

// amount is a decimal SEK amount of the request, shown as money.
func (l *auditLine) amount(k string) string {
	s := str(l.req, k)
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

// reason is ": " and the request's member k, when given.
func (l *auditLine) reason(k string) string {
	if r := strings.TrimSpace(str(l.req, k)); r != "" {
		return ": " + r
	}
	return ""
}

// actionWords say what each audited action did; whole means the words are the whole
// sentence (no actor before them).
var actionWords map[string]func(l *auditLine) (what string, whole bool)

func init() {
	actionWords = map[string]func(l *auditLine) (string, bool){
		"POST /admin/v1/accounts": func(l *auditLine) (string, bool) {
			return fmt.Sprintf("created the account %s (residency %s)", orDash(str(l.after, "customer"), str(l.req, "customer")),
				orDash(str(l.after, "residency"), str(l.req, "residency"))), false
		},
		"PATCH /admin/v1/accounts/{id}": accountChangeWords,
		"POST /admin/v1/accounts/{id}/credits": func(l *auditLine) (string, bool) {
			return "credited " + l.account + " " + l.amount("amount_sek") + l.reason("note"), false
		},
		"POST /admin/v1/accounts/{id}/adjustments": func(l *auditLine) (string, bool) {
			return "adjusted the balance of " + l.account + " by " + l.amount("amount_sek") + l.reason("reason"), false
		},
		"POST /admin/v1/accounts/{id}/keys": func(l *auditLine) (string, bool) {
			what := "created the key " + orDash(str(l.after, "id"), "") + " for " + l.account
			if n := str(l.req, "name"); n != "" {
				what += " (" + n + ")"
			}
			return what, false
		},
		"POST /admin/v1/accounts/{id}/models": func(l *auditLine) (string, bool) {
			var ms []string
			if list, ok := l.req["models"].([]any); ok {
				for _, m := range list {
					if s, ok := m.(string); ok {
						ms = append(ms, s)
					}
				}
			}
			return "enabled " + strings.Join(ms, ", ") + " for " + l.account, false
		},
		"DELETE /admin/v1/accounts/{id}/models/{model...}": func(l *auditLine) (string, bool) {
			return "disabled a model for " + l.account, false
		},
		"POST /admin/v1/accounts/{id}/test-box": func(l *auditLine) (string, bool) {
			return "sent a test-box request to " + orDash(str(l.req, "model"), "a model") + " for " + l.account, false
		},
		"POST /admin/v1/keys/{id}/revoke": func(l *auditLine) (string, bool) { return "revoked the key " + l.e.Target, false },
		"PATCH /admin/v1/keys/{id}": func(l *auditLine) (string, bool) {
			return limitsWords(l.e.Request, "the key "+l.e.Target), false
		},
		"PUT /admin/v1/catalog": func(l *auditLine) (string, bool) {
			what := "loaded a catalogue"
			if n, ok := l.after["models"].(float64); ok {
				what += fmt.Sprintf(" of %d models and %v routes", int(n), l.after["routes"])
			}
			return what, false
		},
		"PATCH /admin/v1/models/{id}": func(l *auditLine) (string, bool) {
			return "changed the prices of " + l.e.Target + changeWords(l.e, "input_ore_per_million_tokens", "output_ore_per_million_tokens"), false
		},
		"PATCH /admin/v1/routes/{id}": func(l *auditLine) (string, bool) {
			return "changed the route " + l.e.Target + changeWords(l.e, "weight", "priority", "state"), false
		},
		"POST /admin/v1/signups/{id}/approve": func(l *auditLine) (string, bool) { return "approved the signup " + l.e.Target, false },
		"POST /admin/v1/signups/{id}/reject":  func(l *auditLine) (string, bool) { return "rejected the signup " + l.e.Target, false },
	}
	for k, v := range operatorActionWords {
		actionWords[k] = v
	}
}

// accountChangeWords say what a PATCH of an account changed.
func accountChangeWords(l *auditLine) (string, bool) {
	var parts []string
	if v, ok := l.req["suspended"].(bool); ok {
		parts = append(parts, map[bool]string{true: "suspended", false: "resumed"}[v]+" "+l.account+l.reason("suspension_reason"))
	}
	if r := str(l.req, "residency"); r != "" {
		parts = append(parts, "set the residency of "+l.account+" to "+r)
	}
	if w, ok := l.req["queue_weight"].(float64); ok {
		parts = append(parts, fmt.Sprintf("set the queue weight of %s to %g", l.account, w))
	}
	if _, ok := l.req["limits"]; ok {
		parts = append(parts, limitsWords(l.e.Request, l.account))
	}
	if len(parts) == 0 {
		parts = []string{"changed " + l.account}
	}
	return strings.Join(parts, " and "), false
}

// operatorActionWords say what the operators' own actions did: operators, tokens, logins.
var operatorActionWords = map[string]func(l *auditLine) (string, bool){
	"POST /admin/v1/operators": func(l *auditLine) (string, bool) {
		return "added the operator " + orDash(str(l.req, "name"), l.e.Target) + " (" + str(l.req, "role") + ")", false
	},
	"PATCH /admin/v1/operators/{name}": func(l *auditLine) (string, bool) {
		what := "changed the operator " + l.e.Target
		if r := str(l.req, "role"); r != "" {
			what += " to role " + r
		}
		return what, false
	},
	"POST /admin/v1/tokens": func(l *auditLine) (string, bool) {
		what := "made the API token " + orDash(str(l.after, "name"), str(l.req, "name")) + " (" + orDash(str(l.after, "role"), str(l.req, "role")) + ")"
		if o := str(l.req, "operator"); o != "" {
			what += " for " + o
		}
		return what, false
	},
	"POST /admin/v1/tokens/{id}/revoke": func(l *auditLine) (string, bool) {
		var before map[string]any
		_ = json.Unmarshal(l.e.Before, &before)
		return "revoked the API token " + orDash(str(before, "name"), l.e.Target) + " of " + orDash(str(before, "operator"), "?"), false
	},
	"POST /admin/v1/sessions/oidc": func(l *auditLine) (string, bool) {
		if l.e.Status >= 400 {
			who := ""
			if em := str(l.req, "email"); em != "" {
				who = " of " + em
			}
			return "Refused sign-in through OIDC" + who + fmt.Sprintf(" (%d)", l.e.Status), true
		}
		if len(l.e.Before) > 0 && string(l.e.Before) != "null" {
			return "signed in through OIDC; the provider changed the role to " + str(l.after, "role"), false
		}
		return "signed in through OIDC as a new operator (" + str(l.after, "role") + ")", false
	},
	"POST /admin/v1/sessions": func(l *auditLine) (string, bool) {
		if l.e.Status >= 400 {
			return "Failed login as " + orDash(str(l.req, "name"), "an unknown operator") + " from " +
				strings.TrimPrefix(l.e.Target, "client:") + fmt.Sprintf(" (%d)", l.e.Status), true
		}
		return "logged in", false
	},
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
