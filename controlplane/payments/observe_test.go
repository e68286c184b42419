package payments

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"
)

// OnEvent is told each delivery's event type and outcome, bounded: a request without a
// valid signature is ("none", "refused_request"), an unhandled type is ("other",
// "ignored"), an applied event carries its Outcome.
func TestWebhookOnEvent(t *testing.T) {
	f := newFixture(t)
	var got [][2]string
	h, err := NewWebhook(WebhookConfig{Secret: whsec, SecretKey: "sk_test_123", Ledger: f.st,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), OnEvent: func(typ, out string) { got = append(got, [2]string{typ, out}) }})
	if err != nil {
		t.Fatal(err)
	}
	signed := func(b []byte) { deliver(h, b, HeaderSignature, sign(b, whsec, time.Now())) }
	deliver(h, []byte(`{}`), "", "")
	f.created(t, "cs_obs_1", f.account, 10000)
	signed(checkoutEventJSON("evt_obs_1", EventCheckoutCompleted, "cs_obs_1", f.account, "paid", "sek", 10000))
	signed(checkoutEventJSON("evt_obs_2", EventCheckoutCompleted, "cs_obs_unknown", f.account, "paid", "sek", 10000))
	signed([]byte(`{"id":"evt_obs_3","object":"event","type":"customer.created","api_version":"2020-08-27","data":{"object":{}}}`))
	signed(chargeRefundedJSON("evt_obs_4", "ch_obs", "pi_cs_obs_1", 10000, 2500, false))
	want := [][2]string{
		{"none", "refused_request"},
		{EventCheckoutCompleted, string(OutcomeCredited)},
		{EventCheckoutCompleted, string(OutcomeUnknownSession)},
		{"other", "ignored"},
		{EventChargeRefunded, string(OutcomeRefunded)},
	}
	if !slices.Equal(got, want) {
		t.Errorf("observed %v, want %v", got, want)
	}
}

// OnSession is told whether each checkout session was created (stripe-mock) or failed
// (provider unreachable); a refused body reaches neither the provider nor OnSession.
func TestTopupOnSession(t *testing.T) {
	sm := startStripeMock(t)
	f := newFixture(t)
	var got []bool
	tp := newTestTopup(t, sm.URL, f.st)
	tp.cfg.OnSession = func(created bool) { got = append(got, created) }
	doTopup(t, tp, http.MethodPost, f.account, "req-obs-1", `{"amount_sek": 100}`)
	doTopup(t, tp, http.MethodPost, f.account, "req-obs-2", `{"amount_sek": 1}`)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	down := newTestTopup(t, closed, f.st)
	down.cfg.OnSession = tp.cfg.OnSession
	doTopup(t, down, http.MethodPost, f.account, "req-obs-3", `{"amount_sek": 100}`)
	if !slices.Equal(got, []bool{true, false}) {
		t.Errorf("observed %v, want [true false]", got)
	}
}
