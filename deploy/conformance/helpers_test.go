package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	anthropic "github.com/anthropics/anthropic-sdk-go"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/option"
	anthropic2 "github.com/anthropics/anthropic-sdk-go/v2"
	anthropic2opt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	oaopt "github.com/openai/openai-go/v3/option"

	"github.com/sekgate/gateway/internal/poll"
)

// openAIClient is the official OpenAI SDK pointed at {base_url}/v1.
func openAIClient(t testing.TB, s *Stack, key string) openai.Client {
	return openai.NewClient(oaopt.WithBaseURL(s.DataURL+"/v1"), oaopt.WithAPIKey(key),
		oaopt.WithHTTPClient(checkedClient(t)), oaopt.WithMaxRetries(0), oaopt.WithRequestTimeout(20*time.Second))
}

// anthropicV1 is the official Messages SDK (v1) at {base_url}, sending the key as x-api-key.
func anthropicV1(t testing.TB, s *Stack, key string) anthropic.Client {
	return anthropic.NewClient(anthropicopt.WithBaseURL(s.DataURL), anthropicopt.WithAPIKey(key),
		anthropicopt.WithHTTPClient(checkedClient(t)), anthropicopt.WithMaxRetries(0))
}

// anthropicV2 is the official Messages SDK (v2) at {base_url}, sending the key as a bearer
// token.
func anthropicV2(t testing.TB, s *Stack, key string) anthropic2.Client {
	return anthropic2.NewClient(anthropic2opt.WithBaseURL(s.DataURL), anthropic2opt.WithAuthToken(key),
		anthropic2opt.WithHTTPClient(checkedClient(t)), anthropic2opt.WithMaxRetries(0))
}

var (
	sharedOnce sync.Once
	shared     Account
)

// sharedAccount is one funded `se` account with every model, for tests that only read or
// infer and do not look at records or balances.
func sharedAccount(t testing.TB) (*Stack, Account) {
	t.Helper()
	s := getStack(t)
	sharedOnce.Do(func() { shared = s.NewAccount(t, "se", 10000) })
	if shared.Key == "" {
		t.Fatal("shared account was not created")
	}
	return s, shared
}

// envelope is the JSON error envelope.
type envelope struct {
	Type  string `json:"type"`
	Error struct {
		Type    string  `json:"type"`
		Message string  `json:"message"`
		Code    *string `json:"code"`
		Param   *string `json:"param"`
	} `json:"error"`
	DocumentationURL string `json:"documentation_url"`
}

// wantError asserts an error envelope with the status and, when code is not empty, that
// code (or that type, for errors named by type).
func wantError(t testing.TB, r Response, status int, code string) envelope {
	t.Helper()
	var e envelope
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	if err := json.Unmarshal(r.Body, &e); err != nil || e.Error.Type == "" || e.Error.Message == "" {
		t.Fatalf("not an error envelope: %v: %s", err, r.Body)
	}
	if code != "" && (e.Error.Code == nil || *e.Error.Code != code) && e.Error.Type != code {
		got := "<nil>"
		if e.Error.Code != nil {
			got = *e.Error.Code
		}
		t.Fatalf("code %s type %s, want %s: %s", got, e.Error.Type, code, r.Body)
	}
	if !strings.HasPrefix(r.Header.Get("X-Request-Id"), "req_") {
		t.Errorf("error without X-Request-Id")
	}
	return e
}

func chatReq(model string, extra ...any) map[string]any {
	m := map[string]any{"model": model, "messages": []any{map[string]any{"role": "user", "content": "Hej"}}}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}

// negativeWait bounds a negative check ("no second record appears", "nothing is
// billed"): there is no event to wait for, so the check keeps looking this long. It is
// twenty usage batch intervals (50 ms), so what must not happen would have happened by
// then even on a busy machine.
const negativeWait = time.Second

// stillHolds is a negative check: it looks at cond a few times over negativeWait and
// fails the test as soon as it stops holding.
func stillHolds(t testing.TB, what string, cond func() bool) {
	t.Helper()
	poll.Holds(t, negativeWait, what, cond)
}

func sim(knobs ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(knobs); i += 2 {
		m[knobs[i].(string)] = knobs[i+1]
	}
	return m
}

// record is a request record as the account reads it.
type record struct {
	RequestID        string  `json:"request_id"`
	TS               string  `json:"ts"`
	KeyID            *string `json:"key_id"`
	Model            string  `json:"model"`
	Provider         *string `json:"provider"`
	Residency        *string `json:"residency"`
	Status           int     `json:"status"`
	Result           string  `json:"result"`
	PromptTokens     *int64  `json:"prompt_tokens"`
	CompletionTokens *int64  `json:"completion_tokens"`
	PriceMicroSEK    int64   `json:"price_micro_sek"`
	PriceSEK         string  `json:"price_sek"`
}

// waitRecord waits until the account can read the record of requestID.
func (s *Stack) waitRecord(t testing.TB, a Account, requestID string) record {
	t.Helper()
	var rec record
	s.waitFor(t, "record "+requestID, func() bool {
		r := s.Do(t, "GET", "/v1/service/requests/"+requestID, a.Key, nil, nil)
		if r.Status != 200 {
			return false
		}
		return json.Unmarshal(r.Body, &rec) == nil
	})
	return rec
}

// listRecords reads the account's request list with a raw query.
func (s *Stack) listRecords(t testing.TB, a Account, query string) ([]record, Response) {
	t.Helper()
	r := s.Do(t, "GET", "/v1/service/requests"+query, a.Key, nil, nil)
	var list struct {
		Data []record `json:"data"`
	}
	if r.Status == 200 {
		if err := json.Unmarshal(r.Body, &list); err != nil {
			t.Fatal(err)
		}
	}
	return list.Data, r
}

// account reads GET /v1/service/account.
func (s *Stack) account(t testing.TB, a Account) map[string]any {
	t.Helper()
	r := s.Do(t, "GET", "/v1/service/account", a.Key, nil, nil)
	if r.Status != 200 {
		t.Fatalf("account: %d %s", r.Status, r.Body)
	}
	return r.JSON(t)
}

// noRouteHeaders asserts that no route was reported (refused before routing).
func noRouteHeaders(t testing.TB, h http.Header) {
	t.Helper()
	if v := h.Get("X-Service-Provider"); v != "" {
		t.Errorf("X-Service-Provider %q on a request refused before routing", v)
	}
	if v := h.Get("X-Service-Residency"); v != "" {
		t.Errorf("X-Service-Residency %q on a request refused before routing", v)
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprint(err))
	}
	return b
}

// oa, av1 and av2 return addressable clients (the SDKs' services have pointer methods).
func oa(t testing.TB, s *Stack, key string) *openai.Client {
	c := openAIClient(t, s, key)
	return &c
}

func av1(t testing.TB, s *Stack, key string) *anthropic.Client {
	c := anthropicV1(t, s, key)
	return &c
}

func av2(t testing.TB, s *Stack, key string) *anthropic2.Client {
	c := anthropicV2(t, s, key)
	return &c
}
