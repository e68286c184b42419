package conformance

import (
	"encoding/json"
	"fmt"
	"regexp"
	"testing"

	"github.com/openai/openai-go/v3"
)

// Section "What the service does": rules 1 to 9.

// Rule 1: stateless — no stored completions or responses; store true is refused.
func TestService_Stateless_NothingStored(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	r := s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat))
	var res struct{ ID string }
	if err := json.Unmarshal(r.Body, &res); err != nil || res.ID == "" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	wantError(t, s.Do(t, "GET", "/v1/chat/completions/"+res.ID, a.Key, nil, nil), 501, "endpoint_not_supported")
	wantError(t, s.Do(t, "GET", "/v1/chat/completions/"+res.ID+"/messages", a.Key, nil, nil), 501, "endpoint_not_supported")
	wantError(t, s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat, "store", true)), 400, "")
	rr := s.Post(t, "/v1/responses", a.Key, map[string]any{"model": modelChat, "input": "Hej"})
	var resp struct{ ID string }
	_ = json.Unmarshal(rr.Body, &resp)
	wantError(t, s.Do(t, "GET", "/v1/responses/"+resp.ID, a.Key, nil, nil), 501, "endpoint_not_supported")
	wantError(t, s.Post(t, "/v1/responses", a.Key, map[string]any{"model": modelChat, "input": "Hej", "previous_response_id": resp.ID}), 400, "")
}

// Rule 2: routes are chosen among those allowed for the account; a model not enabled for
// the account is not served.
func TestService_OnlyRoutesAllowedForAccount(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 100, modelEmbed)
	wantError(t, s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat)), 404, "model_not_found")
}

// Rule 3: residency is the account's; requests stay inside the policy and no request can
// override it.
func TestService_Residency_RequestsStayInsidePolicy(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	se := s.NewAccount(t, "se", 100, modelChat, modelEU, modelUS)
	eu := s.NewAccount(t, "eu", 100, modelChat, modelEU, modelUS)
	anyA := s.NewAccount(t, "any", 100, modelChat, modelEU, modelUS)
	cases := []struct {
		a       Account
		model   string
		allowed bool
		region  string
	}{
		{se, modelChat, true, "se-sto-1"}, {se, modelEU, false, ""}, {se, modelUS, false, ""},
		{eu, modelChat, true, "se-sto-1"}, {eu, modelEU, true, "de-fra-1"}, {eu, modelUS, false, ""},
		{anyA, modelUS, true, "us-east-1"},
	}
	for _, c := range cases {
		// Attempts to override the policy per request change nothing.
		r := s.Do(t, "POST", "/v1/chat/completions", c.a.Key, map[string]string{"X-Service-Policy": "any", "X-Service-Residency": "any"},
			mustJSON(chatReq(c.model, "residency", "any")))
		if c.allowed {
			if r.Status != 200 || r.Header.Get("X-Service-Residency") != c.region {
				t.Errorf("%s on %s: %d region %q", c.a.ID, c.model, r.Status, r.Header.Get("X-Service-Residency"))
			}
			continue
		}
		if r.Status == 200 || (r.Header.Get("X-Service-Residency") != "" && r.Header.Get("X-Service-Residency") != "se-sto-1") {
			t.Errorf("policy broken: %s on %s: %d region %q", c.a.ID, c.model, r.Status, r.Header.Get("X-Service-Residency"))
		}
	}
	// The model list shows no endpoint for models whose routes the policy excludes.
	var list struct {
		Data []struct {
			ID        string
			Endpoints []string
		}
	}
	_ = json.Unmarshal(s.Do(t, "GET", "/v1/models", se.Key, nil, nil).Body, &list)
	for _, m := range list.Data {
		if (m.ID == modelUS || m.ID == modelEU) && len(m.Endpoints) != 0 {
			t.Errorf("se account sees endpoints %v of %s", m.Endpoints, m.ID)
		}
		if m.ID == modelChat && len(m.Endpoints) == 0 {
			t.Errorf("se account sees no endpoint of %s", m.ID)
		}
	}
}

// Rule 3: failover stays inside the policy and happens before the first byte: the model's
// first route refuses connections, the second answers.
func TestService_FailoverBeforeFirstByte(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	r := s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelFailover))
	if r.Status != 200 || r.Header.Get("X-Service-Residency") != "se-sto-1" {
		t.Fatalf("failover: %d region %q %s", r.Status, r.Header.Get("X-Service-Residency"), r.Body)
	}
}

// Rule 5: money is in SEK — integer micro-SEK, integer öre prices, exact decimal strings.
func TestService_MoneyIsExactSEK(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 100, modelChat)
	r := s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat))
	rec := s.waitRecord(t, a, r.Header.Get("X-Request-Id"))
	p, c := *rec.PromptTokens, *rec.CompletionTokens
	want := (p*chatInOre+99)/100 + (c*chatOutOre+99)/100
	if rec.PriceMicroSEK != want {
		t.Errorf("price %d micro-SEK for %d+%d tokens, want %d", rec.PriceMicroSEK, p, c, want)
	}
	if rec.PriceSEK != "" && rec.PriceSEK != fmt.Sprintf("%d.%06d", want/1_000_000, want%1_000_000) &&
		!regexp.MustCompile(`^\d+\.\d+$`).MatchString(rec.PriceSEK) {
		t.Errorf("price_sek %q", rec.PriceSEK)
	}
	var acct struct {
		Micro int64  `json:"balance_micro_sek"`
		SEK   string `json:"balance_sek"`
	}
	s.waitFor(t, "the debit", func() bool {
		raw, _ := json.Marshal(s.account(t, a))
		return json.Unmarshal(raw, &acct) == nil && acct.Micro == 100_000_000-want
	})
	if !regexp.MustCompile(`^-?\d+\.\d{2,6}$`).MatchString(acct.SEK) {
		t.Errorf("balance_sek %q", acct.SEK)
	}
}

// Rule 6: inference requires a positive balance; running requests may take it below zero.
func TestService_PositiveBalanceRequired(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 0, modelChat)
	wantError(t, s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat)), 402, "insufficient_quota")
	// A top-up makes it positive: inference is admitted.
	s.Admin(t, "POST", "/admin/v1/accounts/"+a.ID+"/credits", map[string]any{"amount_sek": "1.00", "note": "top-up"})
	s.waitFor(t, "the credit to reach the node", func() bool {
		return s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat)).Status == 200
	})
}

// Rule 7: tools are executed by the client: the model's tool call comes back to the client.
func TestService_ToolsExecutedByClient(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	res, err := oa(t, s, a.Key).Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
		Model:    modelChat,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Vad är vädret i Umeå?")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name: "get_weather", Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
		})},
		ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Choices[0].Message.ToolCalls) == 0 || res.Choices[0].Message.ToolCalls[0].Function.Name != "get_weather" {
		t.Fatalf("no tool call returned to the client: %+v", res.Choices[0].Message)
	}
}

// Rule 8: an access request creates no account or key (see the Endpoints signup test).
func TestService_AccessRequestCreatesNoAccount(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	before := len(s.Admin(t, "GET", "/admin/v1/accounts", nil)["data"].([]any))
	r := s.Do(t, "POST", "/v1/service/signup", "", map[string]string{"Content-Type": "application/x-www-form-urlencoded"},
		[]byte("name=Grace+Hopper&email=grace%40example.org&consent=yes"))
	if r.Status != 303 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	list := s.Admin(t, "GET", "/admin/v1/accounts", nil)["data"].([]any)
	for _, acct := range list {
		if acct.(map[string]any)["customer"] == "Grace Hopper" {
			t.Fatalf("signup created an account (accounts %d -> %d)", before, len(list))
		}
	}
}

// Rule 9: X-Service-Provider and X-Service-Residency report the configured route.
func TestService_RouteHeadersReportConfiguredRoute(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	r := s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat))
	if r.Header.Get("X-Service-Provider") != "sim-se" || r.Header.Get("X-Service-Residency") != "se-sto-1" ||
		r.Header.Get("X-Service-Policy") != "se" {
		t.Fatalf("headers %v", r.Header)
	}
	rec := s.waitRecord(t, a, r.Header.Get("X-Request-Id"))
	if rec.Provider == nil || *rec.Provider != "sim-se" {
		t.Errorf("record provider %v", rec.Provider)
	}
}
