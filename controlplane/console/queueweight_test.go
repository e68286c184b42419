package console_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/sekgate/gateway/controlplane/store"
)

// The account page shows the account's fair-queue weight and lets an operator change it
// (a confirmation naming the account, then a redirect); a weight out of range is refused
// with the API's message and changes nothing.
func TestConsoleQueueWeight(t *testing.T) {
	srv, st := newConsole(t)
	ctx := context.Background()
	a, err := st.CreateAccount(ctx, "Weighted AB", "se")
	if err != nil {
		t.Fatal(err)
	}
	c := browser(t)
	c.Jar = insecureJar{jar: c.Jar}
	csrf := login(t, srv, c)
	page := srv.URL + "/console/accounts/" + a.ID
	_, body := get(t, c, page)
	if !strings.Contains(body, `id="queue-weight"`) || !strings.Contains(body, `name="queue_weight"`) ||
		!strings.Contains(body, "Change the queue weight of Weighted AB ("+a.ID+")?") {
		t.Fatalf("account page without the weight or its form:\n%.4000s", body)
	}
	weight := func() int {
		t.Helper()
		got, err := st.GetAccount(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.QueueWeight
	}

	res, _ := post(t, c, page+"/queue-weight", url.Values{"csrf": {csrf}, "queue_weight": {"4"}})
	if loc, shown := followed(t, c, srv.URL, res); loc != "/console/accounts/"+a.ID || !strings.Contains(shown, "Queue weight set to 4.") ||
		!strings.Contains(shown, `id="queue-weight" title="turns in the nodes' fair queue for each turn of a weight-1 account, when every model server is full">4</div>`) {
		t.Fatalf("after setting 4: %s\n%.4000s", loc, shown)
	}
	if weight() != 4 {
		t.Fatalf("stored weight %d", weight())
	}
	audit, err := st.ListAudit(ctx, store.AuditQuery{Target: a.ID, Limit: 10})
	if err != nil || len(audit) != 1 || audit[0].Actor != "operator:alice" || audit[0].Action != "PATCH /admin/v1/accounts/{id}" {
		t.Fatalf("audit: %+v %v", audit, err)
	}

	for _, bad := range []string{"0", "101", "2.5", "many"} {
		res, _ := post(t, c, page+"/queue-weight", url.Values{"csrf": {csrf}, "queue_weight": {bad}})
		if _, shown := followed(t, c, srv.URL, res); !strings.Contains(shown, "queue_weight must be a whole number from 1 to 100") &&
			!strings.Contains(shown, "The queue weight must be a whole number from 1 to 100.") {
			t.Errorf("weight %q: no refusal shown:\n%.4000s", bad, shown)
		}
	}
	if weight() != 4 {
		t.Fatalf("a refused weight was stored: %d", weight())
	}
}
