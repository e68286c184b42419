package alerts_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/alerts"
	"github.com/sekgate/gateway/controlplane/catalog"
	"github.com/sekgate/gateway/controlplane/pgtest"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/controlplane/store/storetest"
	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// clock is the injected clock of the store and the evaluator.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// receiver is a webhook endpoint: it keeps every delivery and answers the first fail ones
// with 503.
type receiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []delivery
	fail int
}

type delivery struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, fail int) *receiver {
	r := &receiver{fail: fail}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, delivery{req.Header.Clone(), b})
		failing := r.fail > 0
		r.fail--
		r.mu.Unlock()
		if failing {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

type env struct {
	st  *store.Store
	clk *clock
	ev  *alerts.Evaluator
}

func newEnv(t *testing.T) *env {
	t.Helper()
	clk := &clock{t: time.Now().UTC().Truncate(time.Second)}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, _ := storetest.Open(t, store.Config{Logger: quiet, MaxConns: 4, Now: clk.now})
	ev, err := alerts.New(alerts.Config{Store: st, Now: clk.now, Logger: quiet, RetryBase: 10 * time.Second, MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	return &env{st: st, clk: clk, ev: ev}
}

// tick evaluates the rules and sends what is due, as one turn of Run.
func (e *env) tick(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if err := e.ev.Evaluate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.ev.Deliver(ctx); err != nil {
		t.Fatal(err)
	}
}

func decode(t *testing.T, d delivery) alerts.Event {
	t.Helper()
	var ev alerts.Event
	if err := json.Unmarshal(d.body, &ev); err != nil {
		t.Fatalf("%s: %v", d.body, err)
	}
	return ev
}

// A low balance alerts once, signed, however many evaluations it stands; it resolves
// when topped up and fires again when it drops again.
func TestBalanceAlertOnceSignedResolvedRefired(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	rcv := newReceiver(t, 0)
	a, err := e.st.CreateAccount(ctx, "Low AB", "se")
	if err != nil {
		t.Fatal(err)
	}
	rule, err := e.st.CreateAlertRule(ctx, store.AlertRule{Name: "low balance", Kind: store.AlertBalanceBelow, Threshold: 5_000_000, WebhookURL: rcv.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		e.tick(t)
		e.clk.add(time.Minute)
	}
	got := rcv.deliveries()
	if len(got) != 1 {
		t.Fatalf("%d deliveries of a standing condition, want 1", len(got))
	}
	ev := decode(t, got[0])
	if ev.Event != "firing" || ev.Subject != a.ID || ev.AccountID != a.ID || ev.Value == nil || *ev.Value != 0 || ev.Rule.ID != rule.ID {
		t.Fatalf("event %+v", ev)
	}
	if err := alerts.Verify(rule.Secret, got[0].header.Get(alerts.HeaderSignature), got[0].body, e.clk.now(), 5*time.Minute); err != nil {
		t.Fatalf("signature: %v (header %q)", err, got[0].header.Get(alerts.HeaderSignature))
	}
	if got[0].header.Get(alerts.HeaderEvent) != "firing" || got[0].header.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", got[0].header)
	}

	if _, err := e.st.AddCredit(ctx, store.Credit{AccountID: a.ID, AmountMicroSEK: 10_000_000, Kind: store.KindCredit}); err != nil {
		t.Fatal(err)
	}
	e.tick(t)
	e.tick(t)
	if got = rcv.deliveries(); len(got) != 2 || decode(t, got[1]).Event != "resolved" || decode(t, got[1]).Subject != a.ID {
		t.Fatalf("after the top-up: %d deliveries", len(got))
	}
	if _, err := e.st.AddAdjustment(ctx, a.ID, -8_000_000, "test"); err != nil {
		t.Fatal(err)
	}
	e.tick(t)
	if got = rcv.deliveries(); len(got) != 3 || decode(t, got[2]).Event != "firing" {
		t.Fatalf("after the balance dropped again: %d deliveries", len(got))
	}
}

// A receiver that fails gets the same delivery again after the backoff, until it accepts;
// one that never accepts is given up on after MaxAttempts.
func TestDeliveryRetries(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	flaky, dead := newReceiver(t, 2), newReceiver(t, 1000)
	if err := e.st.TouchNode(ctx, "node-a", 1, "se", 0); err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{flaky.srv.URL, dead.srv.URL} {
		if _, err := e.st.CreateAlertRule(ctx, store.AlertRule{Name: "silent", Kind: store.AlertNodeSilent, Threshold: 60_000, WebhookURL: url}); err != nil {
			t.Fatal(err)
		}
	}
	e.clk.add(2 * time.Minute) // node-a silent for two minutes
	e.tick(t)                  // attempt 1 of each fails
	e.tick(t)                  // not due yet: nothing sent
	if len(flaky.deliveries()) != 1 || len(dead.deliveries()) != 1 {
		t.Fatalf("sent %d and %d before the backoff passed", len(flaky.deliveries()), len(dead.deliveries()))
	}
	e.clk.add(10 * time.Second) // the first backoff
	e.tick(t)                   // attempt 2 fails
	e.clk.add(20 * time.Second) // doubled
	e.tick(t)                   // attempt 3: flaky accepts, dead has had its last
	e.clk.add(time.Hour)
	e.tick(t)
	fl, dd := flaky.deliveries(), dead.deliveries()
	if len(fl) != 3 || len(dd) != 3 {
		t.Fatalf("attempts: flaky %d, dead %d; want 3 and 3", len(fl), len(dd))
	}
	for _, d := range fl {
		if d.header.Get(alerts.HeaderDelivery) != fl[0].header.Get(alerts.HeaderDelivery) || string(d.body) != string(fl[0].body) {
			t.Errorf("a retry differs: %v %s", d.header, d.body)
		}
	}
	list, err := e.st.ListAlertDeliveries(ctx, "", 10)
	if err != nil || len(list) != 2 {
		t.Fatalf("deliveries %+v %v", list, err)
	}
	states := map[string]store.AlertDelivery{}
	for _, d := range list {
		states[d.WebhookURL] = d
	}
	if d := states[flaky.srv.URL]; d.State != store.DeliveryDelivered || d.Attempts != 3 || d.DeliveredAt == nil {
		t.Errorf("flaky receiver's delivery %+v", d)
	}
	if d := states[dead.srv.URL]; d.State != store.DeliveryFailed || d.Attempts != 3 || d.LastStatus != 503 {
		t.Errorf("dead receiver's delivery %+v", d)
	}
}

// Node and route rules: spool age over its threshold, a route a node reports an open
// breaker or a problem for; reports older than the report window do not count.
func TestNodeAndRouteRules(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	rcv := newReceiver(t, 0)
	for _, r := range []store.AlertRule{
		{Name: "spool", Kind: store.AlertSpoolAgeAbove, Threshold: 30_000, WebhookURL: rcv.srv.URL},
		{Name: "routes", Kind: store.AlertRouteProblem, WebhookURL: rcv.srv.URL},
	} {
		if _, err := e.st.CreateAlertRule(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(e.st.TouchNode(ctx, "node-a", 1, "se", 45*time.Second))
	must(e.st.TouchNode(ctx, "node-b", 1, "se", time.Second))
	must(e.st.ReportBreakers(ctx, "node-a", map[string]string{"r-open": "open", "r-half": "half-open"}))
	must(e.st.ReportRouteHealth(ctx, "node-b", map[string]string{"r-dns": "unresolvable"}, nil))
	e.tick(t)
	subjects := map[string]string{}
	for _, d := range rcv.deliveries() {
		ev := decode(t, d)
		subjects[ev.Rule.Name+"/"+ev.Subject] = ev.Event
	}
	want := map[string]string{"spool/node-a": "firing", "routes/r-open": "firing", "routes/r-dns": "firing"}
	if len(subjects) != len(want) {
		t.Fatalf("events %v, want %v", subjects, want)
	}
	for k, v := range want {
		if subjects[k] != v {
			t.Errorf("events %v, want %v", subjects, want)
		}
	}
	// The breaker closes; node-b's report ages out of the window.
	e.clk.add(10 * time.Minute)
	must(e.st.ReportBreakers(ctx, "node-a", map[string]string{}))
	e.tick(t)
	resolved := 0
	for _, d := range rcv.deliveries()[3:] {
		if ev := decode(t, d); ev.Event == "resolved" && ev.Rule.Name == "routes" {
			resolved++
		}
	}
	if resolved != 2 {
		t.Errorf("%d route problems resolved, want 2", resolved)
	}
}

func TestVerify(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"event":"firing"}`)
	good := alerts.Sign("whsec_a", now, body)
	tests := []struct {
		name, secret, header string
		body                 []byte
		at                   time.Time
		want                 error
	}{
		{"good", "whsec_a", good, body, now.Add(time.Minute), nil},
		{"other secret", "whsec_b", good, body, now, alerts.ErrBadSignature},
		{"changed body", "whsec_a", good, []byte(`{"event":"resolved"}`), now, alerts.ErrBadSignature},
		{"replayed later", "whsec_a", good, body, now.Add(time.Hour), alerts.ErrStale},
		{"no time", "whsec_a", "v1=00", body, now, alerts.ErrBadSignature},
		{"empty", "whsec_a", "", body, now, alerts.ErrBadSignature},
	}
	for _, tc := range tests {
		if err := alerts.Verify(tc.secret, tc.header, tc.body, tc.at, 5*time.Minute); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// A budget used past the rule's percentage fires for the account's budget and the key's,
// each once, with the share found.
func TestBudgetAlert(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	rcv := newReceiver(t, 0)
	if _, _, err := e.st.UpsertCatalog(ctx, &catalog.Catalog{Models: []catalog.Model{{
		Model: snapshot.Model{ID: "m1", Endpoint: snapshot.EndpointChat, InputOrePerMillion: 100_000, OutputOrePerMillion: 100_000},
		Routes: []snapshot.Route{{ID: "r1", Provider: "p", BaseURL: "http://127.0.0.1:9/v1", Protocols: []string{snapshot.EndpointChat},
			Region: "se-sto-1", Country: "SE", Weight: 1}},
	}}}); err != nil {
		t.Fatal(err)
	}
	a, err := e.st.CreateAccount(ctx, "Budget AB", "se")
	if err != nil {
		t.Fatal(err)
	}
	k, _, err := e.st.CreateKey(ctx, a.ID, "ci", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.SetAccountBudget(ctx, a.ID, &snapshot.Budget{Period: snapshot.PeriodMonth, LimitMicroSEK: 10_000}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.SetKeyBudget(ctx, k.ID, &snapshot.Budget{Period: snapshot.PeriodDay, LimitMicroSEK: 100_000}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.CreateAlertRule(ctx, store.AlertRule{Name: "budgets", Kind: store.AlertBudgetUsedAbove, Threshold: 80, WebhookURL: rcv.srv.URL}); err != nil {
		t.Fatal(err)
	}
	// 9,000 micro-SEK: 90% of the account's budget, 9% of the key's.
	rec := usage.Record{RequestID: "req_001", TS: e.clk.now(), AccountID: a.ID, KeyID: &k.ID, Model: "m1", Status: 200,
		Result: usage.ResultOK, PromptTokens: 5, CompletionTokens: 4, PriceMicroSEK: money.Price(5, 4, 100_000, 100_000)}
	if rep, err := e.st.IngestBatch(ctx, usage.Batch{NodeID: "n", BatchID: "b", Records: []usage.Record{rec}}); err != nil || rep.Inserted != 1 {
		t.Fatalf("ingest %+v %v", rep, err)
	}
	e.tick(t)
	e.tick(t)
	got := rcv.deliveries()
	if len(got) != 1 {
		t.Fatalf("%d deliveries, want 1 (the account's budget)", len(got))
	}
	if ev := decode(t, got[0]); ev.Subject != a.ID || ev.Value == nil || *ev.Value != 90 || !strings.Contains(ev.Detail, "90%") {
		t.Fatalf("event %+v", ev)
	}
}
