package conformance

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/alerts"
	"github.com/sekgate/gateway/internal/poll"
)

// A budget reached on one node is refused by every node within one poll, and a
// budget_used_above alert reaches the test's webhook receiver once, signed, retried when
// the receiver fails: a control plane (alert rules every second) and two nodes of one
// region. The second node spends nothing itself; it is probed with count_tokens, which is
// admitted like inference but charges nothing.
func TestFleet_BudgetRefusedOnEveryNodeAndAlerted(t *testing.T) {
	o := newOpsStack(t, "--alert-interval", "1s")
	node2 := o.regionalNode(t, "budget-2", "SE")

	// The receiver fails its first delivery with 503, then accepts.
	var mu sync.Mutex
	type delivery struct {
		header http.Header
		body   []byte
	}
	var got []delivery
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, delivery{r.Header.Clone(), b})
		n := len(got)
		mu.Unlock()
		if n == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer hook.Close()
	deliveries := func() []delivery {
		mu.Lock()
		defer mu.Unlock()
		return append([]delivery(nil), got...)
	}

	a := o.NewAccount(t, "se", 100, modelChat)
	o.waitFor(t, "the second node to know the key", func() bool { return o.getAt(t, node2, "/v1/models", a.Key).Status == 200 })
	rule := o.Admin(t, "POST", "/admin/v1/alert-rules", map[string]any{"name": "budget 80%", "kind": "budget_used_above",
		"account_id": a.ID, "threshold": 80, "webhook_url": hook.URL})
	secret, _ := rule["secret"].(string)

	// The budget reaches both nodes with the snapshot that carries it.
	o.Admin(t, "PUT", "/admin/v1/accounts/"+a.ID+"/budget", map[string]any{"period": "month", "limit_sek": "0.000001"})
	want := int64(o.Admin(t, "GET", "/admin/v1/snapshot", nil)["version"].(float64))
	o.waitFor(t, "both nodes to apply the budget's snapshot", func() bool {
		nodes, _ := o.Admin(t, "GET", "/admin/v1/nodes", nil)["data"].([]any)
		applied := 0
		for _, n := range nodes {
			if v, _ := n.(map[string]any)["applied_version"].(float64); int64(v) >= want {
				applied++
			}
		}
		return applied == 2
	})
	probe := `{"model":"` + modelChat + `","messages":[{"role":"user","content":"x"}]}`
	refusedAt := func(url string) bool {
		prev := o.DataURL
		o.DataURL = url
		defer func() { o.DataURL = prev }()
		r := o.Do(t, "POST", "/v1/messages/count_tokens", a.Key, nil, []byte(probe))
		var e envelope
		_ = json.Unmarshal(r.Body, &e)
		return r.Status == 402 && e.Error.Code != nil && *e.Error.Code == "budget_exceeded"
	}
	if refusedAt(node2) {
		t.Fatal("the second node refused before anything was spent")
	}
	if r := o.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat, "max_tokens", 4)); r.Status != 200 {
		t.Fatalf("the spending request: %d %s", r.Status, r.Body)
	}
	spent := time.Now()
	// The node records a request as its answer ends, just after the client has it.
	o.waitFor(t, "the spending node to refuse", func() bool { return refusedAt(o.DataURL) })
	// One poll: a usage batch (every 50 ms here) and the balance watch's answer.
	o.waitFor(t, "the second node to refuse", func() bool { return refusedAt(node2) })
	if d := time.Since(spent); d > 5*time.Second {
		t.Errorf("the second node refused after %s", d)
	}

	// The alert: the first attempt fails (503), the retry 10 s later is accepted.
	if !poll.Wait(60*time.Second, func() bool { return len(deliveries()) >= 2 }) {
		t.Fatalf("%d deliveries reached the receiver, want 2 (a failure and its retry)", len(deliveries()))
	}
	// Three more evaluations: a standing condition sends nothing new.
	poll.Holds(t, 3*time.Second, "no delivery for a standing condition", func() bool { return len(deliveries()) <= 2 })
	ds := deliveries()
	if len(ds) != 2 {
		t.Fatalf("%d deliveries, want 2", len(ds))
	}
	for i, d := range ds {
		if err := alerts.Verify(secret, d.header.Get(alerts.HeaderSignature), d.body, time.Now(), 5*time.Minute); err != nil {
			t.Errorf("delivery %d: %v", i, err)
		}
		var ev alerts.Event
		if err := json.Unmarshal(d.body, &ev); err != nil || ev.Event != "firing" || ev.Subject != a.ID || ev.Value == nil || *ev.Value < 100 {
			t.Errorf("delivery %d: %+v %v", i, ev, err)
		}
	}
	if ds[0].header.Get(alerts.HeaderDelivery) != ds[1].header.Get(alerts.HeaderDelivery) || string(ds[0].body) != string(ds[1].body) {
		t.Errorf("the retry differs from the first attempt")
	}
	list, _ := o.Admin(t, "GET", "/admin/v1/alert-deliveries", nil)["data"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["state"] != "delivered" || list[0].(map[string]any)["attempts"].(float64) != 2 {
		t.Errorf("deliveries %v", list)
	}
}
