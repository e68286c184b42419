package payments

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/usage"
)

// deliverSigned signs and delivers an event and expects the 200 acknowledgement: every
// refusal of a correctly signed event is acknowledged (the provider would only retry an
// event that is refused again) and recorded with its outcome.
func (f *fixture) deliverSigned(t *testing.T, payload []byte) {
	t.Helper()
	wantReceived(t, deliver(f.h, payload, HeaderSignature, sign(payload, whsec, time.Now())))
}

func (f *fixture) outcome(t *testing.T, eventID string) string {
	t.Helper()
	var o string
	if err := f.st.Pool().QueryRow(context.Background(), `SELECT outcome FROM payment_events WHERE event_id = $1`, eventID).Scan(&o); err != nil {
		t.Fatalf("event %s not recorded: %v", eventID, err)
	}
	return o
}

func (f *fixture) newAccount(t *testing.T) string {
	t.Helper()
	a, err := f.st.CreateAccount(context.Background(), "Other AB", "se")
	if err != nil {
		t.Fatal(err)
	}
	return a.ID
}

func (f *fixture) balanceOf(t *testing.T, account string) int64 {
	t.Helper()
	ctx := context.Background()
	b, err := f.st.Balance(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	if sum, err := f.st.LedgerSum(ctx, account); err != nil || sum != b {
		t.Fatalf("balance %d of %s disagrees with the ledger sum %d (%v)", b, account, sum, err)
	}
	return b
}

// TestWebhookCreditsOnlyWhatTheGatewayCreated: the top-up creates a session at stripe-mock;
// signed events for a session the gateway did not create, with another amount or currency,
// naming another account, or in the other mode credit nothing and are recorded with their
// refusal; the genuine event afterwards credits the session once.
func TestWebhookCreditsOnlyWhatTheGatewayCreated(t *testing.T) {
	sm := startStripeMock(t)
	f := newFixture(t)
	other := f.newAccount(t)
	tp := newTestTopup(t, sm.URL, f.st)
	w, _ := doTopup(t, tp, http.MethodPost, f.account, "req-e2e", `{"amount_sek": 250}`)
	if w.Code != http.StatusOK {
		t.Fatalf("top-up: %d %s", w.Code, w.Body.String())
	}
	var sess string
	if err := f.st.Pool().QueryRow(context.Background(), `SELECT id FROM checkout_sessions WHERE request_id = 'req-e2e'`).Scan(&sess); err != nil {
		t.Fatal(err)
	}
	const ore = 25000
	paid := func(evt, session, account string, amount int64, currency string, live bool) []byte {
		return checkoutEventJSONMode(evt, EventCheckoutCompleted, session, account, "paid", currency, amount, live, "pi_e2e")
	}
	for _, tc := range []struct {
		name, event string
		payload     []byte
		outcome     Outcome
	}{
		{"session the gateway did not create", "evt_foreign", paid("evt_foreign", "cs_test_not_ours", f.account, ore, "sek", false), OutcomeUnknownSession},
		{"another amount", "evt_more", paid("evt_more", sess, f.account, ore*10, "sek", false), OutcomeAmountMismatch},
		{"a smaller amount", "evt_less", paid("evt_less", sess, f.account, 100, "sek", false), OutcomeAmountMismatch},
		{"another currency", "evt_eur", paid("evt_eur", sess, f.account, ore, "eur", false), OutcomeAmountMismatch},
		{"another account", "evt_other", paid("evt_other", sess, other, ore, "sek", false), OutcomeAccountMismatch},
		{"live event for a test key", "evt_live", paid("evt_live", sess, f.account, ore, "sek", true), OutcomeWrongMode},
		{"async success for a foreign session", "evt_async_foreign",
			checkoutEventJSON("evt_async_foreign", EventAsyncPaymentSucceeded, "cs_test_foreign2", f.account, "paid", "sek", ore), OutcomeUnknownSession},
	} {
		f.deliverSigned(t, tc.payload)
		if got := f.outcome(t, tc.event); got != string(tc.outcome) {
			t.Errorf("%s: outcome %s, want %s", tc.name, got, tc.outcome)
		}
		if b := f.balanceOf(t, f.account) + f.balanceOf(t, other); b != 0 {
			t.Fatalf("%s: %d micro-SEK credited", tc.name, b)
		}
	}
	if n := f.count(t, `SELECT count(*) FROM ledger`); n != 0 {
		t.Fatalf("%d ledger entries after refused events", n)
	}
	// The genuine event still credits, once, and completes the session.
	good := paid("evt_good", sess, f.account, ore, "sek", false)
	f.deliverSigned(t, good)
	f.deliverSigned(t, good)
	if b := f.balanceOf(t, f.account); b != 250_000_000 {
		t.Fatalf("balance %d after the genuine event, want 250 SEK", b)
	}
	if n := f.count(t, `SELECT count(*) FROM checkout_sessions WHERE id = $1 AND status = 'complete' AND payment_intent_id = 'pi_e2e'`, sess); n != 1 {
		t.Fatal("session not marked complete with its payment intent")
	}
}

// TestWebhookLiveKeyRefusesTestEvents: a webhook configured with a live key refuses
// test-mode events even for a recorded session.
func TestWebhookLiveKeyRefusesTestEvents(t *testing.T) {
	f := newFixture(t)
	h, err := NewWebhook(WebhookConfig{Secret: whsec, SecretKey: "sk_live_123", Ledger: f.st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	f.h = h
	f.created(t, "cs_test_mode", f.account, 10000)
	f.deliverSigned(t, checkoutEventJSON("evt_testmode", EventCheckoutCompleted, "cs_test_mode", f.account, "paid", "sek", 10000))
	if got := f.outcome(t, "evt_testmode"); got != string(OutcomeWrongMode) {
		t.Fatalf("outcome %s, want wrong_mode", got)
	}
	if b := f.balanceOf(t, f.account); b != 0 {
		t.Fatalf("balance %d", b)
	}
	for _, key := range []string{"", "pk_live_1", "whsec_1", "live_1"} {
		if _, err := NewWebhook(WebhookConfig{Secret: whsec, SecretKey: key, Ledger: f.st}); err == nil {
			t.Errorf("NewWebhook accepted secret key %q", key)
		}
	}
}

func chargeRefundedJSON(eventID, chargeID, pi string, amountOre, refundedOre int64, live bool) []byte {
	b, _ := json.Marshal(map[string]any{
		"id": eventID, "object": "event", "type": EventChargeRefunded, "api_version": "2020-08-27",
		"created": time.Now().Unix(), "livemode": live,
		"data": map[string]any{"object": map[string]any{
			"id": chargeID, "object": "charge", "amount": amountOre, "amount_refunded": refundedOre, "currency": "sek",
			"payment_intent": pi, "refunded": refundedOre == amountOre, "livemode": live, "paid": true, "status": "succeeded",
		}},
	})
	return b
}

func disputeJSON(eventID, disputeID, chargeID, pi string, amountOre int64, live bool) []byte {
	b, _ := json.Marshal(map[string]any{
		"id": eventID, "object": "event", "type": EventDisputeCreated, "api_version": "2020-08-27",
		"created": time.Now().Unix(), "livemode": live,
		"data": map[string]any{"object": map[string]any{
			"id": disputeID, "object": "dispute", "amount": amountOre, "currency": "sek", "charge": chargeID,
			"payment_intent": pi, "reason": "fraudulent", "status": "needs_response", "livemode": live,
		}},
	})
	return b
}

// paidSession records a session and credits it through its completed event.
func (f *fixture) paidSession(t *testing.T, session string, amountOre int64) {
	t.Helper()
	f.created(t, session, f.account, amountOre)
	f.deliverSigned(t, checkoutEventJSON("evt_paid_"+session, EventCheckoutCompleted, session, f.account, "paid", "sek", amountOre))
	if got := f.outcome(t, "evt_paid_"+session); got != string(OutcomeCredited) {
		t.Fatalf("session %s: outcome %s", session, got)
	}
}

// TestWebhookRefunds: partial, repeated, reordered and full refund events debit exactly
// the refunded total, may take the balance below zero, and refunds of payments that are
// not the gateway's, or in the other mode, change nothing.
func TestWebhookRefunds(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.paidSession(t, "cs_refund", 10000) // 100 SEK, payment intent pi_cs_refund
	// Spend 50 SEK, so a full refund leaves -50 SEK: 50 tokens of a model at 1 SEK each.
	if _, err := f.st.Pool().Exec(ctx, `INSERT INTO models (id, endpoint, input_ore_per_million, output_ore_per_million)
		VALUES ('m', '/v1/chat/completions', 100000000, 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.IngestBatch(ctx, usage.Batch{BatchID: "b", NodeID: "n", Records: []usage.Record{{RequestID: "req_spend",
		TS: time.Now().UTC(), AccountID: f.account, Model: "m", Status: 200, Result: "ok", PromptTokens: 50, PriceMicroSEK: 50_000_000}}}); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		event   []byte
		id      string
		outcome Outcome
		balance int64 // micro-SEK after the step
	}{
		{chargeRefundedJSON("evt_r1", "ch_1", "pi_cs_refund", 10000, 3000, false), "evt_r1", OutcomeRefunded, 20_000_000},
		{chargeRefundedJSON("evt_r1", "ch_1", "pi_cs_refund", 10000, 3000, false), "evt_r1", OutcomeRefunded, 20_000_000}, // same event again
		{chargeRefundedJSON("evt_r1b", "ch_1", "pi_cs_refund", 10000, 3000, false), "evt_r1b", OutcomeAlreadyRefunded, 20_000_000},
		{chargeRefundedJSON("evt_r3", "ch_1", "pi_cs_refund", 10000, 10000, false), "evt_r3", OutcomeRefunded, -50_000_000},
		{chargeRefundedJSON("evt_r2", "ch_1", "pi_cs_refund", 10000, 6000, false), "evt_r2", OutcomeAlreadyRefunded, -50_000_000}, // arrives late
		{chargeRefundedJSON("evt_r_big", "ch_1", "pi_cs_refund", 10000, 99999, false), "evt_r_big", OutcomeAlreadyRefunded, -50_000_000},
		{chargeRefundedJSON("evt_r_foreign", "ch_x", "pi_not_ours", 10000, 10000, false), "evt_r_foreign", OutcomeUnknownSession, -50_000_000},
		{chargeRefundedJSON("evt_r_live", "ch_1", "pi_cs_refund", 10000, 10000, true), "evt_r_live", OutcomeWrongMode, -50_000_000},
	}
	for i, st := range steps {
		f.deliverSigned(t, st.event)
		if got := f.outcome(t, st.id); got != string(st.outcome) {
			t.Errorf("step %d (%s): outcome %s, want %s", i, st.id, got, st.outcome)
		}
		if b := f.balanceOf(t, f.account); b != st.balance {
			t.Fatalf("step %d (%s): balance %d, want %d", i, st.id, b, st.balance)
		}
	}
	if n := f.count(t, `SELECT count(*) FROM ledger WHERE kind = 'refund' AND account_id = $1`, f.account); n != 2 {
		t.Fatalf("%d refund entries, want 2 (30 SEK, then 70 SEK)", n)
	}
	var refunded int64
	if err := f.st.Pool().QueryRow(ctx, `SELECT -sum(amount_micro_sek) FROM ledger WHERE kind = 'refund'`).Scan(&refunded); err != nil || refunded != 100_000_000 {
		t.Fatalf("refunded %d micro-SEK (%v), want the 100 SEK paid", refunded, err)
	}
}

// TestWebhookDisputes: a dispute on one of the gateway's payments is recorded once and
// suspends the account; a dispute on another payment changes nothing.
func TestWebhookDisputes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.paidSession(t, "cs_disputed", 20000)
	other := f.newAccount(t)

	f.deliverSigned(t, disputeJSON("evt_d_foreign", "dp_foreign", "ch_x", "pi_not_ours", 20000, false))
	if got := f.outcome(t, "evt_d_foreign"); got != string(OutcomeUnknownSession) {
		t.Fatalf("foreign dispute: outcome %s", got)
	}
	f.deliverSigned(t, disputeJSON("evt_d_live", "dp_live", "ch_d", "pi_cs_disputed", 20000, true))
	if got := f.outcome(t, "evt_d_live"); got != string(OutcomeWrongMode) {
		t.Fatalf("live dispute: outcome %s", got)
	}
	if a, _ := f.st.GetAccount(ctx, f.account); a.Suspended {
		t.Fatal("refused disputes suspended the account")
	}

	d := disputeJSON("evt_d1", "dp_1", "ch_d", "pi_cs_disputed", 20000, false)
	f.deliverSigned(t, d)
	f.deliverSigned(t, d) // repeated delivery
	f.deliverSigned(t, disputeJSON("evt_d1b", "dp_1", "ch_d", "pi_cs_disputed", 20000, false))
	if got := f.outcome(t, "evt_d1"); got != string(OutcomeAccountSuspended) {
		t.Fatalf("dispute: outcome %s", got)
	}
	if got := f.outcome(t, "evt_d1b"); got != string(OutcomeAlreadyDisputed) {
		t.Fatalf("second event of the dispute: outcome %s", got)
	}
	if n := f.count(t, `SELECT count(*) FROM payment_disputes WHERE dispute_id = 'dp_1' AND account_id = $1 AND amount_ore = 20000 AND reason = 'fraudulent'`, f.account); n != 1 {
		t.Fatalf("%d dispute rows", n)
	}
	a, err := f.st.GetAccount(ctx, f.account)
	if err != nil || !a.Suspended {
		t.Fatalf("account after dispute: %+v %v; want suspended", a, err)
	}
	if b, _ := f.st.GetAccount(ctx, other); b.Suspended {
		t.Fatal("another account was suspended")
	}
	// Its holder reads why: the dispute, not the operator.
	if why, err := f.st.SuspensionReason(ctx, f.account); err != nil || !strings.HasPrefix(why, "a payment was disputed on ") {
		t.Fatalf("suspension reason %q, %v", why, err)
	}
	if why, err := f.st.SuspensionReason(ctx, other); err != nil || !strings.HasPrefix(why, "suspended by the operator") {
		t.Fatalf("suspension reason without a dispute %q, %v", why, err)
	}
	// The dispute moves no money by itself.
	if b := f.balanceOf(t, f.account); b != 200_000_000 {
		t.Fatalf("balance %d after the dispute, want 200 SEK", b)
	}
	if n := f.count(t, `SELECT count(*) FROM ledger WHERE kind <> $1`, store.KindTopup); n != 0 {
		t.Fatalf("%d non-topup ledger entries", n)
	}
}

// TestWebhookSessionExpired: an expired session is marked so and credits nothing.
func TestWebhookSessionExpired(t *testing.T) {
	f := newFixture(t)
	f.created(t, "cs_expiring", f.account, 10000)
	f.deliverSigned(t, checkoutEventJSON("evt_exp", EventCheckoutExpired, "cs_expiring", f.account, "unpaid", "sek", 10000))
	f.deliverSigned(t, checkoutEventJSON("evt_exp_foreign", EventCheckoutExpired, "cs_not_ours", f.account, "unpaid", "sek", 10000))
	if got := f.outcome(t, "evt_exp"); got != string(OutcomeExpired) {
		t.Fatalf("outcome %s, want expired", got)
	}
	if got := f.outcome(t, "evt_exp_foreign"); got != string(OutcomeUnknownSession) {
		t.Fatalf("foreign session: outcome %s", got)
	}
	if n := f.count(t, `SELECT count(*) FROM checkout_sessions WHERE id = 'cs_expiring' AND status = 'expired'`); n != 1 {
		t.Fatal("session not marked expired")
	}
	if b := f.balanceOf(t, f.account); b != 0 {
		t.Fatalf("balance %d", b)
	}
}

// TestWebhookRefundAndDisputeBeforeCheckout: refund and dispute events that arrive before
// the checkout event of their payment are recorded, change nothing, and apply once the
// checkout event names the payment; a repeated delivery changes nothing more.
func TestWebhookRefundAndDisputeBeforeCheckout(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.created(t, "cs_late", f.account, 10000) // its checkout event names pi_cs_late
	refund := chargeRefundedJSON("evt_early_refund", "ch_late", "pi_cs_late", 10000, 3000, false)
	dispute := disputeJSON("evt_early_dispute", "dp_late", "ch_late", "pi_cs_late", 7000, false)
	f.deliverSigned(t, refund)
	f.deliverSigned(t, dispute)
	for _, id := range []string{"evt_early_refund", "evt_early_dispute"} {
		if got := f.outcome(t, id); got != string(OutcomeUnknownSession) {
			t.Fatalf("%s before checkout: outcome %s", id, got)
		}
	}
	if b := f.balanceOf(t, f.account); b != 0 {
		t.Fatalf("balance %d before the checkout event", b)
	}
	f.deliverSigned(t, checkoutEventJSON("evt_late_paid", EventCheckoutCompleted, "cs_late", f.account, "paid", "sek", 10000))
	if got := f.outcome(t, "evt_early_refund"); got != string(OutcomeRefunded) {
		t.Fatalf("early refund after checkout: outcome %s", got)
	}
	if got := f.outcome(t, "evt_early_dispute"); got != string(OutcomeAccountSuspended) {
		t.Fatalf("early dispute after checkout: outcome %s", got)
	}
	if b := f.balanceOf(t, f.account); b != 70_000_000 {
		t.Fatalf("balance %d, want 100 SEK paid less 30 SEK refunded", b)
	}
	if a, err := f.st.GetAccount(ctx, f.account); err != nil || !a.Suspended {
		t.Fatalf("account %+v %v; want suspended", a, err)
	}
	// Redelivering any of them changes nothing.
	for _, p := range [][]byte{refund, dispute, checkoutEventJSON("evt_late_paid", EventCheckoutCompleted, "cs_late", f.account, "paid", "sek", 10000)} {
		f.deliverSigned(t, p)
	}
	if b := f.balanceOf(t, f.account); b != 70_000_000 {
		t.Fatalf("balance %d after redelivery", b)
	}
	if n := f.count(t, `SELECT count(*) FROM payment_events WHERE account_id = $1 AND checkout_session_id = 'cs_late'`, f.account); n != 3 {
		t.Fatalf("%d events tied to the session, want 3", n)
	}
}
