package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

func (e *env) poll(have int64, wait int) (int, *snapshot.Snapshot, time.Duration) {
	e.t.Helper()
	start := time.Now()
	r := e.node("GET", fmt.Sprintf("%s?have=%d&wait=%d", internalapi.PathSnapshot, have, wait), "")
	d := time.Since(start)
	if r.status != 200 {
		return r.status, nil, d
	}
	var s snapshot.Snapshot
	r.json(e.t, &s)
	if err := s.Verify(); err != nil {
		e.t.Fatalf("served snapshot does not verify: %v", err)
	}
	return r.status, &s, d
}

func TestSnapshotLongPoll(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	status, s1, _ := e.poll(0, 0)
	if status != 200 || s1.Version < 1 {
		t.Fatalf("first poll: %d", status)
	}
	// Nothing changes: 304 after the wait.
	status, _, d := e.poll(s1.Version, 1)
	if status != 304 || d < 900*time.Millisecond {
		t.Fatalf("idle poll: %d after %v", status, d)
	}
	// A change made while a node waits reaches it within a second.
	type result struct {
		status int
		snap   *snapshot.Snapshot
		at     time.Time
	}
	done := make(chan result, 1)
	go func() {
		st, s, _ := e.poll(s1.Version, 8)
		done <- result{st, s, time.Now()}
	}()
	e.waitNodeInFlight(1) // the poll is waiting
	changed := time.Now()
	acct := e.createAccount("Acme", "se")
	res := <-done
	if res.status != 200 || res.snap.Version <= s1.Version {
		t.Fatalf("woken poll: %d", res.status)
	}
	if lag := res.at.Sub(changed); lag > 5*time.Second { // the poll waits 8 s: sooner means woken, with room for a busy machine
		t.Fatalf("change reached the node after %v", lag)
	}
	found := false
	for _, a := range res.snap.Accounts {
		found = found || a.ID == acct
	}
	if !found {
		t.Fatalf("new account not in snapshot %d", res.snap.Version)
	}
	// The node's acknowledgement is recorded.
	e.poll(res.snap.Version, 0)
	var nodes struct {
		Data []struct {
			NodeID         string    `json:"node_id"`
			AppliedVersion int64     `json:"applied_version"`
			LastSeen       time.Time `json:"last_seen"`
		}
	}
	e.mustStatus(e.admin("GET", "/admin/v1/nodes", nil), 200).json(t, &nodes)
	if len(nodes.Data) != 1 || nodes.Data[0].NodeID != "node-1" || nodes.Data[0].AppliedVersion != res.snap.Version || time.Since(nodes.Data[0].LastSeen) > time.Minute {
		t.Fatalf("nodes %+v", nodes)
	}
	// Bad parameters and a missing node ID are refused.
	for _, q := range []string{"?have=x", "?have=-1", "?wait=soon", "?wait=-3"} {
		if r := e.node("GET", internalapi.PathSnapshot+q, ""); r.status != 400 {
			t.Errorf("%s: %d", q, r.status)
		}
	}
	if r := e.do("GET", internalapi.PathSnapshot, nodeToken, nil, nil); r.status != 400 {
		t.Errorf("no node id: %d", r.status)
	}
}

func (e *env) postUsage(b usage.Batch) (usage.Reply, int) {
	e.t.Helper()
	body, _ := json.Marshal(b)
	req, _ := http.NewRequest("POST", e.srv.URL+internalapi.PathUsage, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+nodeToken)
	req.Header.Set(internalapi.HeaderNodeID, b.NodeID)
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	var rep usage.Reply
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode == 200 {
		if err := json.Unmarshal(raw, &rep); err != nil {
			e.t.Fatal(err)
		}
	}
	return rep, res.StatusCode
}

func TestUsageAndBalanceWatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustStatus(e.admin("PUT", "/admin/v1/catalog", testCatalog), 200)
	acct := e.createAccount("Acme", "se")
	e.mustStatus(e.admin("POST", "/admin/v1/accounts/"+acct+"/credits", map[string]string{"amount_sek": "10"}), 200)

	var since usage.BalanceUpdate
	e.mustStatus(e.node("GET", internalapi.PathBalances+"?since=0", ""), 200).json(t, &since)
	if since.Seq == 0 || len(since.Balances) != 1 || since.Balances[0].MicroSEK != 10*money.MicroPerSEK {
		t.Fatalf("balances since 0: %+v", since)
	}
	// Idle watch: empty answer after the wait, same seq.
	var idle usage.BalanceUpdate
	e.mustStatus(e.node("GET", fmt.Sprintf("%s?since=%d&wait=1", internalapi.PathBalances, since.Seq), ""), 200).json(t, &idle)
	if len(idle.Balances) != 0 || idle.Seq != since.Seq {
		t.Fatalf("idle watch %+v", idle)
	}

	// A watcher is woken by another node's usage.
	woken := make(chan usage.BalanceUpdate, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var u usage.BalanceUpdate
		e.node("GET", fmt.Sprintf("%s?since=%d&wait=8", internalapi.PathBalances, since.Seq), "").json(t, &u)
		woken <- u
	}()
	e.waitNodeInFlight(1) // the watch is waiting
	rec := usage.Record{RequestID: "req_t1", TS: time.Now(), AccountID: acct, Model: "llama-3.1-8b", Status: 200, Result: usage.ResultOK,
		PromptTokens: 1000, CompletionTokens: 500, PriceMicroSEK: 3000} // 1000 × 150 öre/M + 500 × 300 öre/M
	start := time.Now()
	rep, status := e.postUsage(usage.Batch{NodeID: "node-2", BatchID: "b1", Records: []usage.Record{rec}})
	if status != 200 || rep.Inserted != 1 || rep.BatchID != "b1" || len(rep.Balances) != 1 || rep.Balances[0].MicroSEK != 10*money.MicroPerSEK-3000 {
		t.Fatalf("usage reply %d %+v", status, rep)
	}
	u := <-woken
	if time.Since(start) > 6*time.Second || len(u.Balances) != 1 || u.Balances[0].MicroSEK != 10*money.MicroPerSEK-3000 || u.Seq != rep.BalanceSeq {
		t.Fatalf("watch %+v after %v (reply seq %d)", u, time.Since(start), rep.BalanceSeq)
	}
	wg.Wait()
	// Resent batch: counted once.
	rep, _ = e.postUsage(usage.Batch{NodeID: "node-2", BatchID: "b1", Records: []usage.Record{rec}})
	if rep.Inserted != 0 || rep.Duplicates != 1 || rep.Balances[0].MicroSEK != 10*money.MicroPerSEK-3000 {
		t.Fatalf("resend %+v", rep)
	}
	// An invalid record is rejected alone and the batch settles; malformed JSON is 400.
	if rep, status := e.postUsage(usage.Batch{Records: []usage.Record{{RequestID: "x"}}}); status != 200 || rep.Rejected != 1 {
		t.Fatalf("invalid record: %d %+v", status, rep)
	}
	if r := e.do("POST", internalapi.PathUsage, nodeToken, "{", nil); r.status != 400 {
		t.Fatalf("malformed batch: %d", r.status)
	}
	if r := e.do("POST", internalapi.PathUsage, "", "{}", nil); r.status != 401 {
		t.Fatalf("usage without a node token: %d", r.status)
	}
}
