package conformance

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Section "Authentication".

var messagesBody = []byte(`{"model":"` + modelChat + `","max_tokens":8,"messages":[{"role":"user","content":"Hej"}]}`)

// Rule 1: Authorization: Bearer with a key of this service authenticates.
func TestAuthentication_BearerKeyAuthenticates(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	for _, p := range []string{"/v1/models", "/v1/service/account"} {
		if r := s.Do(t, "GET", p, a.Key, nil, nil); r.Status != 200 {
			t.Errorf("GET %s with a bearer key: %d %s", p, r.Status, r.Body)
		}
	}
	// The scheme name is case-insensitive.
	if r := s.Do(t, "GET", "/v1/models", "", map[string]string{"Authorization": "bearer " + a.Key}, nil); r.Status != 200 {
		t.Errorf("lower-case bearer: %d", r.Status)
	}
}

// Rule 1: keys of other vendors never authenticate.
func TestAuthentication_OtherVendorKeysNeverAuthenticate(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	for _, k := range []string{"sk-proj-abcdefghijklmnopqrstuvwxyz0123456789", "sk-ant-api03-abcdefghijklmnop",
		"hf_abcdefghijklmnopqrstuvwxyz", "sgw_000000000000_0000000000000000000000000000000000000000"} {
		r := s.Do(t, "GET", "/v1/models", k, nil, nil)
		wantError(t, r, 401, "invalid_api_key")
	}
}

// Rule 2: Messages endpoints also accept x-api-key.
func TestAuthentication_XAPIKeyOnMessages(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	r := s.Do(t, "POST", "/v1/messages", "", map[string]string{"x-api-key": a.Key}, messagesBody)
	if r.Status != 200 {
		t.Fatalf("messages with x-api-key: %d %s", r.Status, r.Body)
	}
	r = s.Do(t, "POST", "/v1/messages/count_tokens", "", map[string]string{"x-api-key": a.Key},
		[]byte(`{"model":"`+modelChat+`","messages":[{"role":"user","content":"Hej"}]}`))
	if r.Status == 401 {
		t.Fatalf("count_tokens with x-api-key: %d %s", r.Status, r.Body)
	}
	// Elsewhere x-api-key is not a credential.
	wantError(t, s.Do(t, "GET", "/v1/models", "", map[string]string{"x-api-key": a.Key}, nil), 401, "invalid_api_key")
	wantError(t, s.Post(t, "/v1/chat/completions", "", chatReq(modelChat)), 401, "")
}

// Rule 2: an Authorization header takes precedence, even with an invalid bearer key.
func TestAuthentication_AuthorizationTakesPrecedenceOverXAPIKey(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	r := s.Do(t, "POST", "/v1/messages", "sgw_000000000000_0000000000000000000000000000000000000000",
		map[string]string{"x-api-key": a.Key}, messagesBody)
	e := wantError(t, r, 401, "invalid_api_key")
	if e.Type != "error" {
		t.Errorf("Messages-style error without top-level type: %s", r.Body)
	}
}

// Rule 3: public paths need no key.
func TestAuthentication_PublicPathsNeedNoKey(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	if r := s.Do(t, "GET", "/healthz", "", nil, nil); r.Status != 200 {
		t.Errorf("/healthz: %d", r.Status)
	}
	if r := s.Do(t, "GET", "/openapi.json", "", nil, nil); r.Status != 200 {
		t.Errorf("/openapi.json: %d", r.Status)
	}
	if r := s.Do(t, "GET", "/docs", "", nil, nil); r.Status != 302 {
		t.Errorf("/docs: %d", r.Status)
	}
	r := s.Do(t, "POST", "/v1/service/signup", "", map[string]string{"Content-Type": "application/x-www-form-urlencoded"},
		[]byte("name=Public+Path&email=public%40example.org&consent=yes"))
	if r.Status != 303 {
		t.Errorf("signup: %d %s", r.Status, r.Body)
	}
	wantError(t, s.Do(t, "GET", "/v1/files", "", nil, nil), 501, "endpoint_not_supported")
}

// Rule 4: the payment webhook is authenticated by Payment-Signature, not by a key.
func TestAuthentication_WebhookUsesSignatureNotKey(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	event := checkoutEvent(t, "evt_auth_"+a.KeyID, "cs_auth_"+a.KeyID, "nobody", 10000, "paid")
	// A valid API key is no substitute for the signature.
	r := s.Do(t, "POST", "/v1/stripe/webhook", a.Key, nil, event)
	wantError(t, r, 400, "")
	// A signed event without any key is accepted.
	r = s.Do(t, "POST", "/v1/stripe/webhook", "", map[string]string{"Payment-Signature": s.sign(t, event)}, event)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"received":true`) {
		t.Fatalf("signed webhook: %d %s", r.Status, r.Body)
	}
}

// Rule 5: a missing key is 401.
func TestAuthentication_MissingKeyIs401(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	for _, p := range []string{"/v1/models", "/v1/models/" + modelChat, "/v1/service/account", "/v1/service/requests"} {
		wantError(t, s.Do(t, "GET", p, "", nil, nil), 401, "invalid_api_key")
	}
	for _, p := range []string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses", "/v1/messages",
		"/v1/messages/count_tokens", "/v1/systemone", "/v1/service/topup"} {
		wantError(t, s.Do(t, "POST", p, "", nil, []byte(`{}`)), 401, "")
	}
}

// Rule 5: an unknown key is 401.
func TestAuthentication_UnknownKeyIs401(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	wantError(t, s.Do(t, "GET", "/v1/models", "sgw_0123456789ab_0123456789abcdef0123456789abcdef01234567", nil, nil), 401, "invalid_api_key")
	wantError(t, s.Do(t, "GET", "/v1/models", "", map[string]string{"Authorization": "Basic dXNlcjpwYXNz"}, nil), 401, "")
}

// Rule 5: a revoked key is 401, said as such (api_key_revoked), not as an unknown key.
func TestAuthentication_RevokedKeyIs401(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 100)
	s.Admin(t, "POST", "/admin/v1/keys/"+a.KeyID+"/revoke", nil)
	s.waitFor(t, "revocation to reach the node", func() bool { return s.Do(t, "GET", "/v1/models", a.Key, nil, nil).Status == 401 })
	e := wantError(t, s.Do(t, "GET", "/v1/models", a.Key, nil, nil), 401, "api_key_revoked")
	if !strings.HasPrefix(e.Error.Message, "this API key was revoked at ") {
		t.Errorf("message %q", e.Error.Message)
	}
	wantError(t, s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat)), 401, "api_key_revoked")
}

// Rule 5: an expired key is 401 api_key_expired. Expiry is at least 30 days, so the test
// moves the key's expiry into the past in the database.
func TestAuthentication_ExpiredKeyIsApiKeyExpired(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 100)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE api_keys SET expires_at = now() - interval '1 minute' WHERE id = $1`, a.KeyID); err != nil {
		t.Fatal(err)
	}
	s.waitFor(t, "expiry to reach the node", func() bool { return s.Do(t, "GET", "/v1/models", a.Key, nil, nil).Status == 401 })
	wantError(t, s.Do(t, "GET", "/v1/models", a.Key, nil, nil), 401, "api_key_expired")
	wantError(t, s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat)), 401, "api_key_expired")
	wantError(t, s.Do(t, "POST", "/v1/messages", "", map[string]string{"x-api-key": a.Key}, messagesBody), 401, "api_key_expired")
}

// Rule 6: key IDs are key_<12 lowercase hex>; expiry is 30 to 365 days, chosen at creation.
func TestAuthentication_KeyIDFormatAndExpiryRange(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 0)
	if !regexp.MustCompile(`^key_[0-9a-f]{12}$`).MatchString(a.KeyID) {
		t.Fatalf("key ID %q", a.KeyID)
	}
	for _, days := range []int{29, 366, 0} {
		r, err := s.admin("POST", "/admin/v1/accounts/"+a.ID+"/keys", map[string]any{"expires_in_days": days})
		if err != nil || r.Status != 400 {
			t.Errorf("expires_in_days %d: %d %s", days, r.Status, r.Body)
		}
	}
	for _, days := range []int{30, 365} {
		k := s.Admin(t, "POST", "/admin/v1/accounts/"+a.ID+"/keys", map[string]any{"expires_in_days": days})
		exp, _ := time.Parse(time.RFC3339, k["expires_at"].(string))
		if d := time.Until(exp); d < time.Duration(days)*24*time.Hour-time.Hour || d > time.Duration(days)*24*time.Hour+time.Hour {
			t.Errorf("expires_in_days %d: expires_at %v", days, exp)
		}
	}
}

// Rule 7: errors before a provider is selected carry no route headers.
func TestAuthentication_RouteHeadersAbsentBeforeRouting(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	broke := s.NewAccount(t, "se", 0)
	for _, r := range []Response{
		s.Post(t, "/v1/chat/completions", "", chatReq(modelChat)),
		s.Post(t, "/v1/chat/completions", broke.Key, chatReq(modelChat)),
		s.Post(t, "/v1/chat/completions", broke.Key, map[string]any{"model": modelChat}),
	} {
		if r.Status < 400 {
			t.Fatalf("expected a refusal, got %d", r.Status)
		}
		noRouteHeaders(t, r.Header)
	}
}

// Rule 8: a suspended account gets 403 on everything but its account read.
func TestAuthentication_SuspendedAccountIs403(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 100)
	s.Admin(t, "PATCH", "/admin/v1/accounts/"+a.ID, map[string]any{"suspended": true})
	s.waitFor(t, "suspension to reach the node", func() bool {
		return s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat)).Status == 403
	})
	wantError(t, s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat)), 403, "account_suspended")
	wantError(t, s.Do(t, "GET", "/v1/models", a.Key, nil, nil), 403, "")
	// The account read still answers: its balance and why it is suspended.
	r := s.Do(t, "GET", "/v1/service/account", a.Key, nil, nil)
	if r.Status != 200 {
		t.Fatalf("account of a suspended account: %d %s", r.Status, r.Body)
	}
	if acct := r.JSON(t); acct["suspended"] != true || acct["suspended_reason"] == "" || acct["balance_sek"] == nil {
		t.Errorf("account of a suspended account: %s", r.Body)
	}
}

// Rule 9: cross-origin inference from a web page is not enabled: preflights get no grant and
// no response carries Access-Control-* headers (the transport checks every response).
func TestAuthentication_NoCrossOriginGrant(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	for _, p := range []string{"/v1/chat/completions", "/v1/messages", "/v1/models", "/v1/service/account"} {
		r := s.Do(t, "OPTIONS", p, "", map[string]string{"Origin": "https://app.example.org",
			"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type"}, nil)
		if r.Status != 204 {
			t.Errorf("preflight %s: %d", p, r.Status)
		}
	}
	r := s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat))
	r2 := s.Do(t, "POST", "/v1/chat/completions", a.Key, map[string]string{"Origin": "https://app.example.org"}, mustJSON(chatReq(modelChat)))
	if r.Status != 200 || r2.Status != 200 {
		t.Fatalf("chat: %d %d", r.Status, r2.Status)
	}
}
