package server

import (
	"net"
	"net/http"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/shared/internalapi"
)

// A console test-box request: admitted only with the test-box token, on the private
// test-box listener, for an account the snapshot holds; served and recorded like any
// request of the account, with no key ID. The node token is never a credential here, and
// the test-box token is refused on the public listener.
func TestTestBox(t *testing.T) {
	const (
		nodeToken    = "node-token-0123456789abcdef0123456789"
		testBoxToken = "test-box-token-0123456789abcdef01234"
	)
	g := startGateway(t, func(c *Config) { c.TestBoxToken = testBoxToken })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Srv.ServeTestBox(ln)
	private := &gateway{URL: "http://" + ln.Addr().String(), Meter: g.Meter}
	hdr := internalapi.HeaderTestBoxAccount
	tests := []struct {
		name, key, account string
		gw                 *gateway
		status             int
	}{
		{"another token", "not-the-test-box-token-0123456789abcdef", fixture.AcctSE, private, http.StatusUnauthorized},
		{"the node token", nodeToken, fixture.AcctSE, private, http.StatusUnauthorized},
		{"the test-box token on the public listener", testBoxToken, fixture.AcctSE, g, http.StatusUnauthorized},
		{"a customer key", g.Keys.EU, fixture.AcctSE, private, http.StatusOK}, // the header is ignored: the key's own account
		{"unknown account", testBoxToken, "acct_00000000000000ff", private, http.StatusUnauthorized},
		{"test-box token without the header", testBoxToken, "", private, http.StatusUnauthorized},
		{"suspended account", testBoxToken, fixture.AcctSuspended, private, http.StatusForbidden},
		{"test box", testBoxToken, fixture.AcctSE, private, http.StatusOK},
	}
	// The token sends chat and nothing else: no other path takes it.
	for _, path := range []string{"/v1/models", "/v1/embeddings"} {
		method, body := "GET", ""
		if path == "/v1/embeddings" {
			method, body = "POST", `{"model":"`+fixture.ModelEmbed+`","input":"x"}`
		}
		if r := private.do(t, method, path, testBoxToken, body, hdr, fixture.AcctSE); r.Status != http.StatusUnauthorized {
			t.Fatalf("%s with the test-box token: %d, want 401", path, r.Status)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(g.Meter.Records())
			var r result
			if tt.account == "" {
				r = tt.gw.do(t, "POST", "/v1/chat/completions", tt.key, chatBody)
			} else {
				r = tt.gw.do(t, "POST", "/v1/chat/completions", tt.key, chatBody, hdr, tt.account)
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
			if tt.key == testBoxToken {
				if rec.KeyID != nil || rec.AccountID != tt.account || rec.PriceMicroSEK <= 0 {
					t.Fatalf("test-box record %+v: want key_id null, account %s, a price", rec, tt.account)
				}
			} else if rec.KeyID == nil || rec.AccountID != fixture.AcctEU {
				t.Fatalf("customer record %+v", rec)
			}
		})
	}
}
