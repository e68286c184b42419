package server

import (
	"net/http"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/shared/internalapi"
)

// A console test-box request: admitted only with this node's own token and an account the
// snapshot holds, served and recorded like any request of the account, with no key ID.
func TestTestBox(t *testing.T) {
	const nodeToken = "node-token-0123456789abcdef0123456789"
	g := startGateway(t, func(c *Config) { c.NodeToken = nodeToken })
	hdr := internalapi.HeaderTestBoxAccount
	tests := []struct {
		name, key, account string
		status             int
	}{
		{"another token", "not-the-node-token-0123456789abcdef", fixture.AcctSE, http.StatusUnauthorized},
		{"a customer key", g.Keys.EU, fixture.AcctSE, http.StatusOK}, // the header is ignored: the key's own account
		{"unknown account", nodeToken, "acct_00000000000000ff", http.StatusUnauthorized},
		{"node token without the header", nodeToken, "", http.StatusUnauthorized},
		{"suspended account", nodeToken, fixture.AcctSuspended, http.StatusForbidden},
		{"test box", nodeToken, fixture.AcctSE, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(g.Meter.Records())
			var r result
			if tt.account == "" {
				r = g.do(t, "POST", "/v1/chat/completions", tt.key, chatBody)
			} else {
				r = g.do(t, "POST", "/v1/chat/completions", tt.key, chatBody, hdr, tt.account)
			}
			if r.Status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tt.status, r.Body)
			}
			if tt.status != http.StatusOK {
				if n := len(g.Meter.Records()); n != before {
					t.Fatalf("a refused request was recorded (%d -> %d)", before, n)
				}
				return
			}
			recs := g.Meter.Records()
			rec := recs[len(recs)-1]
			if rec.RequestID != r.Header.Get("X-Request-Id") || gjson.Get(r.Body, "choices.0.message.content").Str == "" {
				t.Fatalf("record %+v for %s", rec, r.Body)
			}
			if tt.key == nodeToken {
				if rec.KeyID != nil || rec.AccountID != tt.account || rec.PriceMicroSEK <= 0 {
					t.Fatalf("test-box record %+v: want key_id null, account %s, a price", rec, tt.account)
				}
			} else if rec.KeyID == nil || rec.AccountID != fixture.AcctEU {
				t.Fatalf("customer record %+v", rec)
			}
		})
	}
}
