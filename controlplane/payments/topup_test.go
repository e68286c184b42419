package payments

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/sekgate/gateway/shared/internalapi"
)

func TestParseTopupBody(t *testing.T) {
	tests := []struct {
		body string
		want int64 // 0: invalid
	}{
		{`{"amount_sek": 99}`, 0},
		{`{"amount_sek": 100}`, 100},
		{`{"amount_sek": 50000}`, 50000},
		{`{"amount_sek": 50001}`, 0},
		{`{"amount_sek": 100.5}`, 0},
		{`{"amount_sek": 100.0}`, 100},
		{`{"amount_sek": "100"}`, 0},
		{`{}`, 0},
		{`{"amount_sek": null}`, 0},
		{``, 0},
		{`{"amount_sek": 100`, 0},
		{`{"amount_sek": 100} {}`, 0},
		{`[100]`, 0},
		{`100`, 0},
		{`{"amount_sek": -100}`, 0},
		{`{"amount_sek": 1e3}`, 0},
		{`{"amount_sek": 1000000000000000000000}`, 0},
		{`{"amount_sek": true}`, 0},
		{`{"amount_sek": 250, "note": "x"}`, 250},
	}
	for _, tt := range tests {
		got, err := ParseTopupBody([]byte(tt.body))
		if tt.want == 0 {
			if err == nil || !errors.Is(err, ErrInvalidAmount) {
				t.Errorf("ParseTopupBody(%q) = %d, %v; want ErrInvalidAmount", tt.body, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseTopupBody(%q) = %d, %v; want %d", tt.body, got, err, tt.want)
		}
	}
}

func FuzzParseTopupBody(f *testing.F) {
	for _, s := range []string{`{"amount_sek": 100}`, `{"amount_sek": 100.5}`, `{"amount_sek":"100"}`, `{}`, `[`, `{"amount_sek": 50000.000}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		n, err := ParseTopupBody(body)
		if err != nil {
			if !errors.Is(err, ErrInvalidAmount) {
				t.Fatalf("error %v does not wrap ErrInvalidAmount", err)
			}
			return
		}
		if n < MinTopupSEK || n > MaxTopupSEK {
			t.Fatalf("accepted out-of-range amount %d", n)
		}
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
	})
}

func newTestTopup(t *testing.T, apiBase string, sessions Sessions) *Topup {
	t.Helper()
	tp, err := NewTopup(TopupConfig{
		SecretKey:         "sk_test_123",
		Sessions:          sessions,
		APIBase:           apiBase,
		SuccessURL:        "https://gateway.example/topup/ok?session={CHECKOUT_SESSION_ID}",
		CancelURL:         "https://gateway.example/topup/cancel",
		MaxNetworkRetries: -1,
		Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

type apiErr struct {
	Error struct {
		Type, Message string
		Code, Param   *string
	}
}

func doTopup(t *testing.T, h http.Handler, method, account, reqID, body string) (*httptest.ResponseRecorder, apiErr) {
	t.Helper()
	r := httptest.NewRequest(method, "/v1/service/topup", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if account != "" {
		r.Header.Set(internalapi.HeaderAccountID, account)
	}
	if reqID != "" {
		r.Header.Set(internalapi.HeaderRequestID, reqID)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var e apiErr
	if w.Code != http.StatusOK && w.Code != http.StatusNoContent {
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error.Type == "" {
			t.Fatalf("status %d without an error envelope: %q", w.Code, w.Body.String())
		}
	}
	return w, e
}

const acct = "acct_0123456789abcdef" // an account that need not exist (the DB is never reached)

func TestTopupAgainstStripeMock(t *testing.T) {
	sm := startStripeMock(t)
	f := newFixture(t)
	h := newTestTopup(t, sm.URL, f.st)

	// Out-of-bounds and malformed bodies never reach the provider.
	for _, body := range []string{`{"amount_sek":99}`, `{"amount_sek":50001}`, `{"amount_sek":100.5}`, `{"amount_sek":"100"}`, `{}`, `{`} {
		w, e := doTopup(t, h, http.MethodPost, f.account, "req-bad", body)
		if w.Code != http.StatusBadRequest || e.Error.Type != "invalid_request_error" || e.Error.Param == nil || *e.Error.Param != "amount_sek" {
			t.Errorf("body %s: status %d, error %+v; want 400 invalid_request_error param amount_sek", body, w.Code, e.Error)
		}
	}
	if n := len(sm.Requests()); n != 0 {
		t.Fatalf("invalid bodies caused %d provider calls", n)
	}

	for _, amount := range []int64{100, 50000} {
		reqID := "req-" + strconv.FormatInt(amount, 10)
		w, _ := doTopup(t, h, http.MethodPost, f.account, reqID, `{"amount_sek": `+strconv.FormatInt(amount, 10)+`}`)
		if w.Code != http.StatusOK {
			t.Fatalf("amount %d: status %d: %s", amount, w.Code, w.Body.String())
		}
		var got struct{ URL string }
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || !strings.HasPrefix(got.URL, "https://") {
			t.Fatalf("amount %d: body %s has no checkout URL", amount, w.Body.String())
		}
		reqs := sm.Requests()
		last := reqs[len(reqs)-1]
		want := map[string]string{
			"mode":                                          "payment",
			"currency":                                      "sek",
			"client_reference_id":                           f.account,
			"metadata[account_id]":                          f.account,
			"metadata[amount_sek]":                          strconv.FormatInt(amount, 10),
			"line_items[0][quantity]":                       "1",
			"line_items[0][price_data][currency]":           "sek",
			"line_items[0][price_data][unit_amount]":        strconv.FormatInt(amount*100, 10),
			"line_items[0][price_data][product_data][name]": "Gateway credit",
			"success_url":                                   "https://gateway.example/topup/ok?session={CHECKOUT_SESSION_ID}",
			"cancel_url":                                    "https://gateway.example/topup/cancel",
		}
		if last.Method != http.MethodPost || last.Path != "/v1/checkout/sessions" {
			t.Fatalf("provider call %s %s; want POST /v1/checkout/sessions", last.Method, last.Path)
		}
		for k, v := range want {
			if got := last.Form.Get(k); got != v {
				t.Errorf("amount %d: form %s = %q, want %q", amount, k, got, v)
			}
		}
		if got := last.Header.Get("Idempotency-Key"); got != "topup-"+reqID {
			t.Errorf("Idempotency-Key = %q, want %q", got, "topup-"+reqID)
		}
		if got := last.Header.Get("Authorization"); got != "Bearer sk_test_123" {
			t.Errorf("Authorization = %q", got)
		}
		// The session stripe-mock created is recorded before its URL is handed out.
		var id, account, currency, status, reqIDGot string
		var ore int64
		var live bool
		if err := f.st.Pool().QueryRow(context.Background(), `SELECT id, account_id, amount_ore, currency, livemode, status, request_id
			FROM checkout_sessions WHERE request_id = $1`, reqID).Scan(&id, &account, &ore, &currency, &live, &status, &reqIDGot); err != nil {
			t.Fatalf("amount %d: session not recorded: %v", amount, err)
		}
		if !strings.HasPrefix(id, "cs_") || account != f.account || ore != amount*100 || currency != "sek" || live || status != "open" {
			t.Errorf("amount %d: recorded session %s %s %d %s live=%v %s", amount, id, account, ore, currency, live, status)
		}
	}
}

func TestTopupProviderDown(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error":{"type":"api_error","message":"boom"}}`)
	}))
	defer down.Close()
	w, e := doTopup(t, newTestTopup(t, down.URL, newFixture(t).st), http.MethodPost, acct, "r1", `{"amount_sek":100}`)
	if w.Code != http.StatusBadGateway || e.Error.Type != "upstream_error" {
		t.Fatalf("status %d %+v; want 502 upstream_error", w.Code, e.Error)
	}
}

func TestTopupEdges(t *testing.T) {
	h := newTestTopup(t, "http://127.0.0.1:1", newFixture(t).st) // never reached
	w, _ := doTopup(t, h, http.MethodGet, acct, "r", "")
	if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") == "" {
		t.Errorf("GET: status %d Allow %q; want 405 with Allow", w.Code, w.Header().Get("Allow"))
	}
	w, _ = doTopup(t, h, http.MethodPost, "", "r", `{"amount_sek":100}`)
	if w.Code != http.StatusUnauthorized {
		t.Errorf("no account: status %d, want 401", w.Code)
	}
	w, e := doTopup(t, h, http.MethodPost, acct, "r", `{"amount_sek":`+strings.Repeat("1", 10000)+`}`)
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("huge body: status %d %+v, want 413", w.Code, e.Error)
	}
}

func TestNewTopupValidates(t *testing.T) {
	for _, cfg := range []TopupConfig{
		{SuccessURL: "https://a/", CancelURL: "https://a/"},
		{SecretKey: "k", SuccessURL: "/relative", CancelURL: "https://a/"},
		{SecretKey: "k", SuccessURL: "https://a/", CancelURL: ""},
		{SecretKey: "k", SuccessURL: "https://a/", CancelURL: "https://a/", APIBase: "localhost:12111"},
		{SecretKey: "sk_other_1", SuccessURL: "https://a/", CancelURL: "https://a/"},
		{SecretKey: "sk_test_1", SuccessURL: "https://a/", CancelURL: "https://a/"}, // no Sessions
	} {
		if _, err := NewTopup(cfg); err == nil {
			t.Errorf("NewTopup(%+v) accepted an invalid config", cfg)
		}
	}
}
