package console

import (
	"encoding/json"
	"testing"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

func TestAuditWords(t *testing.T) {
	names := map[string]string{"acct_1": "Nordic Fintech AB"}
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	for _, tt := range []struct {
		e    adminapi.AuditEntry
		want string
	}{
		{adminapi.AuditEntry{Actor: "operator:demo", Action: "POST /admin/v1/accounts/{id}/credits", Target: "acct_1", Status: 200,
			Request: raw(`{"amount_sek":"1000","note":"Invoice 2026-11"}`)}, "demo credited Nordic Fintech AB 1,000.00 SEK: Invoice 2026-11"},
		{adminapi.AuditEntry{Actor: "token", Action: "POST /admin/v1/accounts/{id}/adjustments", Target: "acct_1", Status: 200,
			Request: raw(`{"amount_sek":"-12.5","reason":"wrong credit"}`)}, "The admin token (break-glass) adjusted the balance of Nordic Fintech AB by -12.50 SEK: wrong credit"},
		{adminapi.AuditEntry{Actor: "operator:ada", Action: "PATCH /admin/v1/accounts/{id}", Target: "acct_2", Status: 200,
			Request: raw(`{"suspended":true}`)}, "ada suspended acct_2"},
		{adminapi.AuditEntry{Actor: "operator:ada", Action: "PATCH /admin/v1/accounts/{id}", Target: "acct_2", Status: 200,
			Credential: "operator_token", TokenID: "otk_0123456789abcdef", TokenName: "ci deploy",
			Request: raw(`{"suspended":true}`)}, "ada (token ci deploy) suspended acct_2"},
		{adminapi.AuditEntry{Actor: "operator:ada", Action: "POST /admin/v1/tokens", Target: "otk_0123456789abcdef", Status: 201,
			Request: raw(`{"name":"laptop"}`), After: raw(`{"name":"laptop","role":"admin","secret":"[redacted]"}`)}, "ada made the API token laptop (admin)"},
		{adminapi.AuditEntry{Actor: "token", Action: "POST /admin/v1/tokens", Target: "otk_0123456789abcdef", Status: 201,
			Request: raw(`{"name":"ci","operator":"bo"}`), After: raw(`{"name":"ci","role":"viewer"}`)}, "The admin token (break-glass) made the API token ci (viewer) for bo"},
		{adminapi.AuditEntry{Actor: "operator:ada", Action: "POST /admin/v1/tokens/{id}/revoke", Target: "otk_0123456789abcdef", Status: 200,
			Before: raw(`{"name":"ci","operator":"bo"}`)}, "ada revoked the API token ci of bo"},
		{adminapi.AuditEntry{Actor: "operator:jane.doe", Action: "POST /admin/v1/sessions/oidc", Target: "jane.doe", Status: 201,
			Credential: "oidc_session", Before: raw(`null`), After: raw(`{"name":"jane.doe","role":"operator"}`)}, "jane.doe signed in through OIDC as a new operator (operator)"},
		{adminapi.AuditEntry{Actor: "operator:jane.doe", Action: "POST /admin/v1/sessions/oidc", Target: "jane.doe", Status: 201,
			Credential: "oidc_session", Before: raw(`{"role":"operator"}`), After: raw(`{"name":"jane.doe","role":"admin"}`)}, "jane.doe signed in through OIDC; the provider changed the role to admin"},
		{adminapi.AuditEntry{Actor: "operator:ada", Action: "PATCH /admin/v1/accounts/{id}", Target: "acct_1", Status: 200,
			Request: raw(`{"suspended":true,"suspension_reason":"unpaid invoice"}`)}, "ada suspended Nordic Fintech AB: unpaid invoice"},
		{adminapi.AuditEntry{Actor: "operator:ada", Action: "PATCH /admin/v1/accounts/{id}", Target: "acct_1", Status: 200,
			Request: raw(`{"limits":{"requests_per_second":10,"burst":20}}`)}, "ada set the limits of Nordic Fintech AB to 10 rps, burst 20"},
		{adminapi.AuditEntry{Actor: "operator:ada", Action: "PATCH /admin/v1/accounts/{id}", Target: "acct_1", Status: 200,
			Request: raw(`{"limits":null}`)}, "ada cleared the limits of Nordic Fintech AB"},
		{adminapi.AuditEntry{Actor: "operator:ada", Action: "PATCH /admin/v1/keys/{id}", Target: "key_0123456789ab", Status: 200,
			Request: raw(`{"limits":{"max_concurrent":2}}`)}, "ada set the limits of the key key_0123456789ab to 2 in flight"},
		{adminapi.AuditEntry{Actor: "operator:ada", Action: "PATCH /admin/v1/accounts/{id}", Target: "acct_1", Status: 200,
			Request: raw(`{"queue_weight":3}`)}, "ada set the queue weight of Nordic Fintech AB to 3"},
		{adminapi.AuditEntry{Actor: "operator:ada", Action: "PATCH /admin/v1/models/{id}", Target: "meta/llama", Status: 200,
			Before: raw(`{"id":"meta/llama","input_ore_per_million_tokens":150,"output_ore_per_million_tokens":300}`),
			After:  raw(`{"id":"meta/llama","input_ore_per_million_tokens":150,"output_ore_per_million_tokens":450}`)},
			"ada changed the prices of meta/llama: output ore per million tokens 300 → 450"},
		{adminapi.AuditEntry{Actor: "operator:bo", Action: "PATCH /admin/v1/routes/{id}", Target: "llama-se", Status: 200,
			Before: raw(`{"id":"llama-se","weight":1,"priority":0,"state":"enabled"}`),
			After:  raw(`{"id":"llama-se","weight":3,"priority":0,"state":"draining"}`)},
			"bo changed the route llama-se: weight 1 → 3, state enabled → draining"},
		{adminapi.AuditEntry{Actor: "operator:bo", Action: "PATCH /admin/v1/routes/{id}", Target: "llama-se", Status: 403,
			Request: raw(`{"state":"disabled"}`)}, "bo tried: changed the route llama-se (refused, 403)"},
		{adminapi.AuditEntry{Actor: "operator:ada", Action: "POST /admin/v1/accounts/{id}/keys", Target: "acct_1", Status: 201,
			Request: raw(`{"name":"ci"}`), After: raw(`{"id":"key_0123456789ab"}`)}, "ada created the key key_0123456789ab for Nordic Fintech AB (ci)"},
		{adminapi.AuditEntry{Actor: "operator:bo", Action: "POST /admin/v1/keys/{id}/revoke", Target: "key_0123456789ab", Status: 403},
			"bo tried: revoked the key key_0123456789ab (refused, 403)"},
		{adminapi.AuditEntry{Actor: "anonymous", Action: "POST /admin/v1/sessions", Target: "client:192.0.2.1", Status: 401,
			Request: raw(`{"name":"demo"}`)}, "Failed login as demo from 192.0.2.1 (401)"},
		{adminapi.AuditEntry{Actor: "operator:ada", Action: "POST /admin/v1/accounts", Target: "acct_3", Status: 201,
			Request: raw(`{"customer":"Acme","residency":"eu"}`), After: raw(`{"customer":"Acme","residency":"eu"}`)}, "ada created the account Acme (residency eu)"},
	} {
		if got := auditWords(tt.e, names); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.e.Action, got, tt.want)
		}
	}
}
