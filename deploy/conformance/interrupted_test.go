package conformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestOperations_KilledNodeLeavesNoRequestIDWithoutRecord: a data plane killed (SIGKILL)
// while streams are open, whose clients already hold a 200 and an X-Request-Id, gives each
// of those requests exactly one record after it restarts: result interrupted, charged for
// the prompt (the node's estimate), and the balance fell by exactly what the records say.
// (Before: none of them had a record, and GET /v1/service/requests/{id} answered 404.)
func TestOperations_KilledNodeLeavesNoRequestIDWithoutRecord(t *testing.T) {
	o := newOpsStack(t)
	a := o.NewAccount(t, "se", 100, modelChat)
	before := accountRead(t, o.Stack, a)

	// Slow streams (the simulator paces 2 tokens a second for 200 tokens): they are
	// still open when the node dies.
	body, _ := json.Marshal(map[string]any{"model": modelChat, "stream": true, "max_tokens": 300,
		"messages": []any{map[string]any{"role": "user", "content": strings.Repeat("Berätta en lång saga. ", 20)}},
		"sim":      map[string]any{"tokens_per_second": 2, "output_tokens": 200}})
	const streams = 6
	var ids []string
	var open []*http.Response
	defer func() {
		for _, r := range open {
			r.Body.Close()
		}
	}()
	for range streams {
		req, _ := http.NewRequest("POST", o.DataURL+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+a.Key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, resp)
		if resp.StatusCode != 200 || resp.Header.Get("X-Request-Id") == "" {
			t.Fatalf("stream: %d", resp.StatusCode)
		}
		// The first event has arrived: the provider is generating.
		if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: ") {
			t.Fatalf("first event: %q %v", line, err)
		}
		ids = append(ids, resp.Header.Get("X-Request-Id"))
	}

	o.stop(t, o.dp, true) // SIGKILL with every stream open
	o.startDP(t)

	var recs []map[string]any
	o.waitFor(t, "a record for every request ID", func() bool {
		r := o.Do(t, "GET", "/v1/service/requests?limit=100", a.Key, nil, nil)
		var list struct {
			Data []map[string]any `json:"data"`
		}
		if r.Status != 200 || json.Unmarshal(r.Body, &list) != nil {
			return false
		}
		recs = list.Data
		return len(recs) >= streams
	})
	stillHolds(t, "no second record of a request", func() bool {
		r := o.Do(t, "GET", "/v1/service/requests?limit=100", a.Key, nil, nil)
		var l struct {
			Data []map[string]any `json:"data"`
		}
		return r.Status == 200 && json.Unmarshal(r.Body, &l) == nil && len(l.Data) <= streams
	})
	r := o.Do(t, "GET", "/v1/service/requests?limit=100", a.Key, nil, nil)
	var list struct {
		Data []map[string]any `json:"data"`
	}
	if r.Status != 200 || json.Unmarshal(r.Body, &list) != nil {
		t.Fatalf("list: %d %s", r.Status, r.Body)
	}
	recs = list.Data
	if len(recs) != streams {
		t.Fatalf("%d records for %d streams: %v", len(recs), streams, recs)
	}
	byID := map[string]map[string]any{}
	var spent int64
	for _, rec := range recs {
		id, _ := rec["request_id"].(string)
		if byID[id] != nil {
			t.Fatalf("request %s has two records", id)
		}
		byID[id] = rec
		p, _ := rec["price_micro_sek"].(float64)
		spent += int64(p)
	}
	for _, id := range ids {
		rec := byID[id]
		if rec == nil {
			t.Fatalf("request %s has no record", id)
		}
		pt, _ := rec["prompt_tokens"].(float64)
		price, _ := rec["price_micro_sek"].(float64)
		routing, _ := rec["routing"].(map[string]any)
		if rec["result"] != "interrupted" || rec["status"] != float64(200) || pt <= 0 || price <= 0 || routing["usage_estimated"] != true {
			t.Fatalf("record of %s: %v", id, rec)
		}
		if g := o.Do(t, "GET", "/v1/service/requests/"+id, a.Key, nil, nil); g.Status != 200 {
			t.Fatalf("GET request %s: %d", id, g.Status)
		}
	}
	o.waitFor(t, "the debits", func() bool { return before-accountRead(t, o.Stack, a) == spent })
}
