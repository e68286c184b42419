package payments

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stripe/stripe-go/v76/webhook"

	"github.com/sekgate/gateway/controlplane/pgtest"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/controlplane/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const whsec = "whsec_test_secret"

type fixture struct {
	st      *store.Store
	h       *Webhook
	account string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, _ := storetest.Open(t, store.Config{MaxConns: 20, Logger: discard})
	acct, err := st.CreateAccount(ctx, "Test AB", "se")
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewWebhook(WebhookConfig{Secret: whsec, SecretKey: "sk_test_123", Ledger: st, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{st: st, h: h, account: acct.ID}
}

// created records a checkout session as the top-up does after the provider created it.
func (f *fixture) created(t *testing.T, sessionID, account string, amountOre int64) {
	t.Helper()
	if err := f.st.RecordCheckoutSession(context.Background(), Session{ID: sessionID, AccountID: account, AmountOre: amountOre,
		Currency: "sek", RequestID: "req_" + sessionID}); err != nil {
		t.Fatal(err)
	}
}

// checkoutEventJSON is a test-mode checkout.session.* event as the provider sends it
// (trimmed), with an API version other than the library's.
func checkoutEventJSON(eventID, typ, sessionID, account, paymentStatus, currency string, amountOre int64) []byte {
	return checkoutEventJSONMode(eventID, typ, sessionID, account, paymentStatus, currency, amountOre, false, "pi_"+sessionID)
}

func checkoutEventJSONMode(eventID, typ, sessionID, account, paymentStatus, currency string, amountOre int64, live bool, pi string) []byte {
	ev := map[string]any{
		"id": eventID, "object": "event", "type": typ, "api_version": "2020-08-27",
		"created": time.Now().Unix(), "livemode": live, "pending_webhooks": 1,
		"data": map[string]any{"object": map[string]any{
			"id": sessionID, "object": "checkout.session", "mode": "payment", "livemode": live,
			"client_reference_id": account, "metadata": map[string]string{"account_id": account, "amount_sek": fmt.Sprint(amountOre / 100)},
			"amount_total": amountOre, "currency": currency, "payment_status": paymentStatus, "status": "complete",
			"payment_intent": pi,
		}},
	}
	b, _ := json.Marshal(ev)
	return b
}

func sign(payload []byte, secret string, ts time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: ts}).Header
}

func deliver(h http.Handler, payload []byte, header, value string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/v1/stripe/webhook", strings.NewReader(string(payload)))
	r.Header.Set("Content-Type", "application/json")
	if header != "" {
		r.Header.Set(header, value)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func (f *fixture) balance(t *testing.T) int64 {
	t.Helper()
	b, err := f.st.Balance(context.Background(), f.account)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (f *fixture) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := f.st.Pool().QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func wantReceived(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	var got received
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &got) != nil || !got.Received {
		t.Fatalf("status %d body %q; want 200 {\"received\": true}", w.Code, w.Body.String())
	}
}

func TestWebhookSignatures(t *testing.T) {
	f := newFixture(t)
	f.created(t, "cs_test_sig", f.account, 10000)
	f.created(t, "cs_test_sig2", f.account, 20000)
	payload := checkoutEventJSON("evt_sig", EventCheckoutCompleted, "cs_test_sig", f.account, "paid", "sek", 10000)
	now := time.Now()
	tests := []struct {
		name, header, value string
		status              int
	}{
		{"missing", "", "", 400},
		{"empty", HeaderSignature, "", 400},
		{"malformed", HeaderSignature, "garbage", 400},
		{"wrong secret", HeaderSignature, sign(payload, "whsec_other", now), 400},
		{"expired", HeaderSignature, sign(payload, whsec, now.Add(-301*time.Second)), 400},
		{"tampered body", HeaderSignature, sign(append([]byte(" "), payload...), whsec, now), 400},
		{"valid", HeaderSignature, sign(payload, whsec, now), 200},
	}
	for _, tt := range tests {
		w := deliver(f.h, payload, tt.header, tt.value)
		if w.Code != tt.status {
			t.Fatalf("%s: status %d body %s; want %d", tt.name, w.Code, w.Body.String(), tt.status)
		}
		if tt.status == 400 {
			var env apiErr
			if json.Unmarshal(w.Body.Bytes(), &env) != nil || env.Error.Type != "invalid_request_error" {
				t.Errorf("%s: body %q is not an error envelope", tt.name, w.Body.String())
			}
			if b := f.balance(t); b != 0 {
				t.Fatalf("%s: balance %d after a refused event", tt.name, b)
			}
			if n := f.count(t, `SELECT count(*) FROM payment_events`); n != 0 {
				t.Fatalf("%s: %d events recorded after a refused event", tt.name, n)
			}
		} else {
			wantReceived(t, w)
		}
	}
	if b := f.balance(t); b != 10000*10_000 {
		t.Fatalf("balance %d after a valid 100 SEK event, want %d", b, 100*1_000_000)
	}
	// The provider's own header name is accepted too.
	payload2 := checkoutEventJSON("evt_sig2", EventCheckoutCompleted, "cs_test_sig2", f.account, "paid", "sek", 20000)
	wantReceived(t, deliver(f.h, payload2, HeaderProviderSignature, sign(payload2, whsec, now)))
	if b := f.balance(t); b != 300*1_000_000 {
		t.Fatalf("balance %d, want 300 SEK", b)
	}
}

func TestWebhookConcurrentDuplicatesCreditOnce(t *testing.T) {
	f := newFixture(t)
	f.created(t, "cs_test_dup", f.account, 25000)
	payload := checkoutEventJSON("evt_dup", EventCheckoutCompleted, "cs_test_dup", f.account, "paid", "sek", 25000)
	header := sign(payload, whsec, time.Now())
	var wg sync.WaitGroup
	codes := make([]int, 100)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = deliver(f.h, payload, HeaderSignature, header).Code
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusOK {
			t.Fatalf("delivery %d: status %d", i, c)
		}
	}
	if b := f.balance(t); b != 250*1_000_000 {
		t.Fatalf("balance %d after 100 deliveries of one 250 SEK event, want %d", b, 250*1_000_000)
	}
	if n := f.count(t, `SELECT count(*) FROM ledger WHERE account_id = $1 AND kind = 'topup'`, f.account); n != 1 {
		t.Fatalf("%d topup ledger entries, want 1", n)
	}
	if sum, err := f.st.LedgerSum(context.Background(), f.account); err != nil || sum != 250*1_000_000 {
		t.Fatalf("ledger sum %d (%v) disagrees with the balance", sum, err)
	}
}

func TestWebhookTwoEventsOneSessionCreditOnce(t *testing.T) {
	f := newFixture(t)
	f.created(t, "cs_test_two", f.account, 50000)
	a := checkoutEventJSON("evt_a", EventCheckoutCompleted, "cs_test_two", f.account, "paid", "sek", 50000)
	b := checkoutEventJSON("evt_b", EventAsyncPaymentSucceeded, "cs_test_two", f.account, "paid", "sek", 50000)
	now := time.Now()
	// Reordered and concurrent: b and a race, then both are repeated.
	var wg sync.WaitGroup
	for _, p := range [][]byte{b, a, b, a} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wantReceived(t, deliver(f.h, p, HeaderSignature, sign(p, whsec, now)))
		}()
	}
	wg.Wait()
	if got := f.balance(t); got != 500*1_000_000 {
		t.Fatalf("balance %d, want 500 SEK once", got)
	}
	if n := f.count(t, `SELECT count(*) FROM payment_events`); n != 2 {
		t.Fatalf("%d events recorded, want 2", n)
	}
	if n := f.count(t, `SELECT count(*) FROM payment_events WHERE outcome = 'already_credited'`); n != 1 {
		t.Fatalf("%d events marked already_credited, want 1", n)
	}
}

func TestWebhookUnpaidThenAsyncSucceeded(t *testing.T) {
	f := newFixture(t)
	f.created(t, "cs_test_async", f.account, 30000)
	f.created(t, "cs_test_failed", f.account, 30000)
	now := time.Now()
	unpaid := checkoutEventJSON("evt_unpaid", EventCheckoutCompleted, "cs_test_async", f.account, "unpaid", "sek", 30000)
	wantReceived(t, deliver(f.h, unpaid, HeaderSignature, sign(unpaid, whsec, now)))
	if got := f.balance(t); got != 0 {
		t.Fatalf("unpaid session credited: balance %d", got)
	}
	if n := f.count(t, `SELECT count(*) FROM payment_events WHERE event_id = 'evt_unpaid' AND outcome = 'not_paid'`); n != 1 {
		t.Fatal("unpaid event not recorded as not_paid")
	}
	failed := checkoutEventJSON("evt_failed", EventAsyncPaymentFailed, "cs_test_failed", f.account, "unpaid", "sek", 30000)
	wantReceived(t, deliver(f.h, failed, HeaderSignature, sign(failed, whsec, now)))
	ok := checkoutEventJSON("evt_async_ok", EventAsyncPaymentSucceeded, "cs_test_async", f.account, "paid", "sek", 30000)
	wantReceived(t, deliver(f.h, ok, HeaderSignature, sign(ok, whsec, now)))
	if got := f.balance(t); got != 300*1_000_000 {
		t.Fatalf("balance %d after async success, want 300 SEK", got)
	}
}

func TestWebhookIgnoredAndRefusedEvents(t *testing.T) {
	f := newFixture(t)
	now := time.Now()
	unknownType := []byte(`{"id":"evt_other","object":"event","type":"customer.created","api_version":"2099-01-01","data":{"object":{"id":"cus_1","object":"customer"}}}`)
	wantReceived(t, deliver(f.h, unknownType, HeaderSignature, sign(unknownType, whsec, now)))
	if n := f.count(t, `SELECT count(*) FROM payment_events`); n != 0 {
		t.Fatalf("unknown event type recorded (%d rows)", n)
	}

	for _, tc := range []struct {
		name, event, account, currency, outcome string
	}{
		{"unknown account", "evt_ghost", "acct_00000000deadbeef", "sek", "unknown_session"},
		{"no account", "evt_noacct", "", "sek", "unknown_session"},
		{"wrong currency", "evt_eur", f.account, "eur", "amount_mismatch"},
	} {
		if tc.account == f.account {
			f.created(t, "cs_"+tc.event, f.account, 10000)
		}
		p := checkoutEventJSON(tc.event, EventCheckoutCompleted, "cs_"+tc.event, tc.account, "paid", tc.currency, 10000)
		wantReceived(t, deliver(f.h, p, HeaderSignature, sign(p, whsec, now)))
		if n := f.count(t, `SELECT count(*) FROM payment_events WHERE event_id = $1 AND outcome = $2`, tc.event, tc.outcome); n != 1 {
			t.Errorf("%s: event not recorded with outcome %s", tc.name, tc.outcome)
		}
	}
	if got := f.balance(t); got != 0 {
		t.Fatalf("balance %d after events that must not credit", got)
	}
	if n := f.count(t, `SELECT count(*) FROM ledger`); n != 0 {
		t.Fatalf("%d ledger entries after events that must not credit", n)
	}

	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/stripe/webhook", nil))
	if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") == "" {
		t.Fatalf("GET: status %d Allow %q", w.Code, w.Header().Get("Allow"))
	}
}

// TestWebhookNotifiesNodes checks the credit reaches the channels the control plane turns
// into balance pushes for data-plane nodes.
func TestWebhookNotifiesNodes(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := f.st.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, ch := range []string{store.ChannelBalances, store.ChannelChanged} {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			t.Fatal(err)
		}
	}
	f.created(t, "cs_test_notify", f.account, 10000)
	p := checkoutEventJSON("evt_notify", EventCheckoutCompleted, "cs_test_notify", f.account, "paid", "sek", 10000)
	wantReceived(t, deliver(f.h, p, HeaderSignature, sign(p, whsec, time.Now())))
	seen := map[string]bool{}
	for !seen[store.ChannelBalances] || !seen[store.ChannelChanged] {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			t.Fatalf("notifications seen %v: %v", seen, err)
		}
		seen[n.Channel] = true
	}
	_, bals, err := f.st.BalancesSince(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, b := range bals {
		if b.AccountID == f.account && b.MicroSEK == 100*1_000_000 {
			found = true
		}
	}
	if !found {
		t.Fatalf("BalancesSince(0) = %+v; want %s at 100 SEK", bals, f.account)
	}
}
