package conformance

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// Section "Limits".

// Request body: 8 MiB for inference; a body just under the limit is not refused for size.
func TestLimits_InferenceBodyMax8MiB(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	wantError(t, s.rawPost(t, "/v1/chat/completions", a.Key, 8<<20+1), 413, "")
	if r := s.Do(t, "POST", "/v1/chat/completions", a.Key, nil, bigBody(8<<20-1024)); r.Status == 413 {
		t.Fatalf("a body under 8 MiB was refused as too large")
	}
}

// Request body: 128 KiB for /v1/systemone.
func TestLimits_SystemOneBodyMax128KiB(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	q := map[string]any{"q": map[string]any{"type": "noul"}}
	over := map[string]any{"model": modelSystemOne, "state": strings.Repeat("a", 128<<10), "questions": q}
	wantError(t, s.Post(t, "/v1/systemone", a.Key, over), 413, "")
	under := map[string]any{"model": modelSystemOne, "state": strings.Repeat("a", 100<<10), "questions": q}
	if r := s.Post(t, "/v1/systemone", a.Key, under); r.Status != 200 {
		t.Fatalf("100 KiB state: %d %s", r.Status, r.Body)
	}
}

// Embedding inputs: 1 to 128 non-empty strings.
func TestLimits_EmbeddingInputsMax128(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	in := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = "ord"
		}
		return out
	}
	if r := s.Post(t, "/v1/embeddings", a.Key, map[string]any{"model": modelEmbed, "input": in(128)}); r.Status != 200 {
		t.Fatalf("128 inputs: %d %s", r.Status, r.Body)
	}
	for name, input := range map[string]any{"129 inputs": in(129), "no input": []string{}, "empty string": "",
		"empty item": []string{"a", ""}, "token array": []int{1, 2, 3}, "token arrays": [][]int{{1, 2}}} {
		e := wantError(t, s.Post(t, "/v1/embeddings", a.Key, map[string]any{"model": modelEmbed, "input": input}), 400, "")
		if e.Error.Type != "invalid_request_error" {
			t.Errorf("%s: %+v", name, e.Error)
		}
	}
	wantError(t, s.Post(t, "/v1/embeddings", a.Key, map[string]any{"model": modelEmbed, "input": "x", "stream": true}), 400, "")
}

// max_tokens and max_output_tokens: minimum 1.
func TestLimits_MaxTokensMin1(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	wantError(t, s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat, "max_tokens", 0)), 400, "")
	wantError(t, s.Post(t, "/v1/completions", a.Key, map[string]any{"model": modelChat, "prompt": "x", "max_tokens": 0}), 400, "")
	wantError(t, s.Post(t, "/v1/responses", a.Key, map[string]any{"model": modelChat, "input": "x", "max_output_tokens": 0}), 400, "")
	wantError(t, s.Post(t, "/v1/messages", a.Key, chatReq(modelChat, "max_tokens", 0)), 400, "")
	if r := s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat, "max_tokens", 1)); r.Status != 200 {
		t.Fatalf("max_tokens 1: %d", r.Status)
	}
}

// dimensions: minimum 1.
func TestLimits_DimensionsMin1(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	wantError(t, s.Post(t, "/v1/embeddings", a.Key, map[string]any{"model": modelEmbed, "input": "x", "dimensions": 0}), 400, "")
	r := s.Post(t, "/v1/embeddings", a.Key, map[string]any{"model": modelEmbed, "input": "x", "dimensions": 64})
	var res struct {
		Data []struct{ Embedding []float64 }
	}
	if err := json.Unmarshal(r.Body, &res); err != nil || r.Status != 200 || len(res.Data[0].Embedding) != 64 {
		t.Fatalf("dimensions 64: %d", r.Status)
	}
}

// logprobs: 0 to 5.
func TestLimits_LogprobsZeroToFive(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	for _, v := range []int{-1, 6} {
		wantError(t, s.Post(t, "/v1/completions", a.Key, map[string]any{"model": modelChat, "prompt": "x", "logprobs": v}), 400, "")
	}
	for _, v := range []int{0, 5} {
		if r := s.Post(t, "/v1/completions", a.Key, map[string]any{"model": modelChat, "prompt": "x", "logprobs": v}); r.Status != 200 {
			t.Errorf("logprobs %d: %d %s", v, r.Status, r.Body)
		}
	}
}

// n and best_of: exactly 1.
func TestLimits_NAndBestOfExactly1(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	for _, f := range []string{"n", "best_of"} {
		wantError(t, s.Post(t, "/v1/completions", a.Key, map[string]any{"model": modelChat, "prompt": "x", f: 2}), 400, "")
		if r := s.Post(t, "/v1/completions", a.Key, map[string]any{"model": modelChat, "prompt": "x", f: 1}); r.Status != 200 {
			t.Errorf("%s 1: %d", f, r.Status)
		}
	}
}

// Prompts per request: exactly one string.
func TestLimits_OnePromptStringPerRequest(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	for _, p := range []any{[]string{"a", "b"}, []string{"a"}, []int{1, 2}, [][]int{{1}}} {
		wantError(t, s.Post(t, "/v1/completions", a.Key, map[string]any{"model": modelChat, "prompt": p}), 400, "")
	}
}

// limit query parameter: 1 to 100, default 20; invalid or out-of-range values fall back to 20.
func TestLimits_RequestListLimit1To100Default20(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 100, modelChat)
	var last string
	for i := 0; i < 22; i++ {
		last = s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat, "max_tokens", 1)).Header.Get("X-Request-Id")
	}
	s.waitRecord(t, a, last)
	s.waitFor(t, "22 records", func() bool { recs, _ := s.listRecords(t, a, "?limit=100"); return len(recs) == 22 })
	for q, want := range map[string]int{"": 20, "?limit=1": 1, "?limit=100": 22, "?limit=0": 20, "?limit=101": 20,
		"?limit=abc": 20, "?limit=-5": 20, "?limit=" + url.QueryEscape("5.5"): 20} {
		recs, r := s.listRecords(t, a, q)
		if r.Status != 200 || len(recs) != want {
			t.Errorf("%q: %d, %d records, want %d", q, r.Status, len(recs), want)
		}
	}
}

// amount_sek: whole SEK, 100 to 50000.
func TestLimits_TopupAmount100To50000(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	for _, v := range []any{99, 50001, 100.5, "100", nil} {
		wantError(t, s.Post(t, "/v1/service/topup", a.Key, map[string]any{"amount_sek": v}), 400, "")
	}
	for _, v := range []int{100, 50000} {
		if r := s.Post(t, "/v1/service/topup", a.Key, map[string]any{"amount_sek": v}); r.Status != 200 {
			t.Errorf("amount %d: %d %s", v, r.Status, r.Body)
		}
	}
}

// name / email / use_case: at most 200 / 254 / 4000 characters.
func TestLimits_SignupFieldLengths(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	post := func(v url.Values) Response {
		return s.Do(t, "POST", "/v1/service/signup", "", form, []byte(v.Encode()))
	}
	ok := func(name, email, useCase string) url.Values {
		return url.Values{"name": {name}, "email": {email}, "use_case": {useCase}, "consent": {"yes"}}
	}
	email := func(n int) string { return strings.Repeat("e", n-len("@example.org")) + "@example.org" }
	for name, v := range map[string]url.Values{
		"name 201":      ok(strings.Repeat("n", 201), "a@example.org", ""),
		"email 255":     ok("N", email(255), ""),
		"use_case 4001": ok("N", "b@example.org", strings.Repeat("u", 4001)),
	} {
		r := post(v)
		if r.Status != 303 || !strings.HasPrefix(r.Header.Get("Location"), s.ErrorURL) {
			t.Errorf("%s: %d %q", name, r.Status, r.Header.Get("Location"))
		}
	}
	r := post(ok(strings.Repeat("n", 200), email(254), strings.Repeat("u", 4000)))
	if r.Status != 303 || !strings.HasPrefix(r.Header.Get("Location"), s.ConfirmURL) {
		t.Errorf("at the limits: %d %q", r.Status, r.Header.Get("Location"))
	}
}

// Key expiry: 30 to 365 days (see TestAuthentication_KeyIDFormatAndExpiryRange).
func TestLimits_KeyExpiry30To365Days(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 0, []string{}...)
	for days, want := range map[int]int{29: 400, 30: 201, 365: 201, 366: 400} {
		r, err := s.admin("POST", "/admin/v1/accounts/"+a.ID+"/keys", map[string]any{"expires_in_days": days})
		if err != nil || (r.Status/100 == 2) != (want/100 == 2) {
			t.Errorf("expires_in_days %d: %d", days, r.Status)
		}
	}
}
