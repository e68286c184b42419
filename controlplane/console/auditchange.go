package console

import (
	"encoding/json"
	"strings"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

// changeWords says how the named fields differ between an audit entry's before and after
// (": weight 1 → 3, state enabled → draining"); "" when none differs or either is missing.
func changeWords(e adminapi.AuditEntry, fields ...string) string {
	var before, after map[string]json.RawMessage
	if json.Unmarshal(e.Before, &before) != nil || json.Unmarshal(e.After, &after) != nil || before == nil || after == nil {
		return ""
	}
	var parts []string
	for _, f := range fields {
		b, a := plain(before[f]), plain(after[f])
		if b != a {
			parts = append(parts, strings.ReplaceAll(f, "_", " ")+" "+b+" → "+a)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, ", ")
}

// plain is a JSON value as text: a string without its quotes, an absent one "—".
func plain(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	if len(v) == 0 {
		return "—"
	}
	return string(v)
}
