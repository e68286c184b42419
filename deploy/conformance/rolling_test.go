package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sekgate/gateway/internal/poll"
)

// A rolling restart of a region under steady load: the region's nodes are restarted one at
// a time (SIGTERM, the node drains and flushes its spool, a new process starts on the same
// spool and port) while clients keep sending through a load balancer that follows each
// node's readiness and retries a refused connection on the region's other node. No client
// request fails and every answered request has exactly one record.

// fleetNode is a data plane of the ops stack that can be restarted on the same address,
// ops address and data directory.
type fleetNode struct {
	name, country, addr, opsAddr, dir string
	cpURL                             string // its --control-plane-url; empty: the stack's
	cmd                               *exec.Cmd
	starts                            int
}

func (o *opsStack) newFleetNode(t *testing.T, name, country string) *fleetNode {
	t.Helper()
	return o.newFleetNodeVia(t, name, country, "")
}

// newFleetNodeVia starts a fleet node whose control plane is at cpURL (empty: the stack's).
func (o *opsStack) newFleetNodeVia(t *testing.T, name, country, cpURL string) *fleetNode {
	t.Helper()
	addr, _ := freeAddr()
	opsAddr, _ := freeAddr()
	n := &fleetNode{name: name, country: country, addr: addr, opsAddr: opsAddr, dir: filepath.Join(o.dir, name), cpURL: cpURL}
	o.startFleetNode(t, n)
	return n
}

// startFleetNode starts n (again) and waits until it is ready.
func (o *opsStack) startFleetNode(t *testing.T, n *fleetNode) {
	t.Helper()
	n.starts++
	cpURL := n.cpURL
	if cpURL == "" {
		cpURL = o.CPURL
	}
	if err := o.spawn("dataplane", fmt.Sprintf("%s-%d", n.name, n.starts), []string{"GATEWAY_NODE_TOKEN=" + o.NodeToken},
		"--listen", n.addr, "--ops-listen", n.opsAddr, "--control-plane-url", cpURL, "--snapshot-public-key-file", o.PublicKey,
		"--node-id", n.name, "--data-dir", n.dir, "--snapshot-wait", "10s", "--usage-batch-interval", "50ms",
		"--country", n.country, "--region", "se-sto",
		"--shutdown-delay", "1s", "--drain-timeout", "10s", "--shutdown-flush-timeout", "10s"); err != nil {
		t.Fatal(err)
	}
	n.cmd = o.procs[len(o.procs)-1]
	o.wait(t, "http://"+n.opsAddr+"/readyz")
}

func (n *fleetNode) url() string { return "http://" + n.addr }

// balancer is what a load balancer in front of a region does: it sends each request to the
// next node whose readiness probe passed last, and sends a request whose connection was
// refused to the next node.
type balancer struct {
	nodes  []*fleetNode
	ready  []atomic.Bool
	next   atomic.Uint64
	client *http.Client
	// retried counts requests sent again after a refused connection.
	retried atomic.Int64
}

func newBalancer(nodes ...*fleetNode) *balancer {
	return &balancer{nodes: nodes, ready: make([]atomic.Bool, len(nodes)),
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
}

// probe checks every node's /readyz every 50 ms until ctx ends.
func (b *balancer) probe(ctx context.Context) {
	c := &http.Client{Timeout: time.Second}
	for ctx.Err() == nil {
		for i, n := range b.nodes {
			ok := false
			if r, err := c.Get("http://" + n.opsAddr + "/readyz"); err == nil {
				ok = r.StatusCode == 200
				r.Body.Close()
			}
			b.ready[i].Store(ok)
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// post sends one request and returns the answering node's index, status and request ID.
func (b *balancer) post(path, key string, body []byte) (int, int, string, error) {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		i := -1
		for range b.nodes {
			j := int(b.next.Add(1) % uint64(len(b.nodes)))
			if b.ready[j].Load() {
				i = j
				break
			}
		}
		if i < 0 { // no node ready: wait for a probe to find one
			poll.Wait(time.Until(deadline), func() bool {
				for j := range b.ready {
					if b.ready[j].Load() {
						return true
					}
				}
				return false
			})
			continue
		}
		req, _ := http.NewRequest("POST", b.nodes[i].url()+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := b.client.Do(req)
		if errors.Is(err, syscall.ECONNREFUSED) {
			b.ready[i].Store(false)
			b.retried.Add(1)
			continue
		}
		if err != nil {
			return i, 0, "", err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return i, resp.StatusCode, resp.Header.Get("X-Request-Id"), nil
	}
	return -1, 0, "", errors.New("no node ready for 20s")
}

// allRecords lists every record of the account, page by page.
func (o *opsStack) allRecords(t *testing.T, key string) []map[string]any {
	t.Helper()
	var out []map[string]any
	after := ""
	for {
		q := url.Values{"limit": {"100"}}
		if after != "" {
			q.Set("after", after)
		}
		r := serviceRead(t, o.Stack, "/v1/service/requests?"+q.Encode(), key)
		var page struct {
			Data      []map[string]any `json:"data"`
			HasMore   bool             `json:"has_more"`
			NextAfter *string          `json:"next_after"`
		}
		if r.Status != 200 || json.Unmarshal(r.Body, &page) != nil {
			t.Fatalf("records: %d %.300s", r.Status, r.Body)
		}
		out = append(out, page.Data...)
		if !page.HasMore || page.NextAfter == nil {
			return out
		}
		after = *page.NextAfter
	}
}

func TestFleet_RollingRestartUnderLoad(t *testing.T) {
	o := newOpsStack(t, fleetCPArgs...)
	o.stop(t, o.dp, false)
	nodes := []*fleetNode{o.newFleetNode(t, "se-sto-a", "SE"), o.newFleetNode(t, "se-sto-b", "SE")}
	o.DataURL = nodes[0].url()
	a := o.NewAccount(t, "se", 100, modelChat)
	o.waitFor(t, "the key at the second node", func() bool {
		return o.getAt(t, nodes[1].url(), "/v1/models", a.Key).Status == 200
	})
	before := accountRead(t, o.Stack, a)

	lb := newBalancer(nodes...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go lb.probe(ctx)
	o.waitFor(t, "both nodes ready at the balancer", func() bool { return lb.ready[0].Load() && lb.ready[1].Load() })

	// Steady load: three clients, one request after another with a short pause (about 150
	// requests a second in all: steady, and light on a shared machine).
	body, _ := json.Marshal(chatReq(modelChat))
	type outcome struct {
		node   int
		status int
		id     string
		err    error
		at     time.Time
	}
	var mu sync.Mutex
	var outcomes []outcome
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for ctx.Err() == nil {
				node, status, id, err := lb.post("/v1/chat/completions", a.Key, body)
				mu.Lock()
				outcomes = append(outcomes, outcome{node, status, id, err, time.Now()})
				mu.Unlock()
				select { // a short pause keeps the load light
				case <-ctx.Done():
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
	}
	// steady waits until the load has answered n more requests: it counts requests, not
	// time, so that a busy machine only makes the test slower.
	steady := func(what string, n int) {
		t.Helper()
		mu.Lock()
		from := len(outcomes)
		mu.Unlock()
		poll.Until(t, time.Minute, fmt.Sprintf("%d requests %s", n, what), func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(outcomes) >= from+n
		})
	}

	// Restart each node in turn.
	type window struct{ from, to time.Time }
	var down []window
	steady("before the restarts", 100)
	for i, n := range nodes {
		start := time.Now()
		if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := o.exited(t, n.cmd, 30*time.Second); code != 0 {
			t.Fatalf("%s exited %d after SIGTERM", n.name, code)
		}
		o.startFleetNode(t, n)
		o.waitFor(t, n.name+" ready at the balancer", func() bool { return lb.ready[i].Load() })
		down = append(down, window{start, time.Now()})
		t.Logf("%s restarted in %v", n.name, time.Since(start).Round(time.Millisecond))
		steady("after "+n.name+" is back", 100)
	}
	cancel()
	wg.Wait()

	// Zero failed requests; the other node carried the load while each was away.
	ids := map[string]bool{}
	served := make([]int, len(nodes))
	during := make([]int, len(nodes)) // requests the other node served while node i was away
	for _, oc := range outcomes {
		if oc.err != nil || oc.status != 200 || oc.id == "" {
			t.Errorf("request failed: node %d, status %d, id %q, err %v", oc.node, oc.status, oc.id, oc.err)
			continue
		}
		if ids[oc.id] {
			t.Errorf("request ID %s answered twice", oc.id)
		}
		ids[oc.id] = true
		served[oc.node]++
		for i, w := range down {
			if oc.at.After(w.from) && oc.at.Before(w.to) && oc.node != i {
				during[i]++
			}
		}
	}
	t.Logf("%d requests (%v per node), %d sent again after a refused connection, %v served by the other node during each restart",
		len(outcomes), served, lb.retried.Load(), during)
	for i, n := range during {
		if n < 10 {
			t.Errorf("only %d requests were served while %s was restarting; the load was not steady", n, nodes[i].name)
		}
	}

	// Zero lost records: each answered request ID has exactly one record at the control
	// plane, and the balance fell by exactly the records' prices.
	o.checkOneRecordEach(t, a, ids, before)
}

// checkOneRecordEach waits for the records of account a's key and checks that every
// answered request ID in ids has exactly one, that there are no others, and that the
// account's balance fell from before by exactly the records' prices, more than zero.
func (o *opsStack) checkOneRecordEach(t *testing.T, a Account, ids map[string]bool, before int64) {
	t.Helper()
	var recs []map[string]any
	o.waitFor(t, "every record at the control plane", func() bool {
		recs = o.allRecords(t, a.Key)
		return len(recs) >= len(ids)
	})
	stillHolds(t, "no second copy of a record", func() bool { return len(o.allRecords(t, a.Key)) <= len(ids) })
	recs = o.allRecords(t, a.Key)
	var priced int64
	seen := map[string]int{}
	for _, rec := range recs {
		id, _ := rec["request_id"].(string)
		seen[id]++
		p, _ := rec["price_micro_sek"].(float64)
		priced += int64(p)
	}
	if len(recs) != len(ids) {
		t.Errorf("%d records for %d answered requests", len(recs), len(ids))
	}
	for id := range ids {
		if seen[id] != 1 {
			t.Errorf("request %s has %d records, want 1", id, seen[id])
		}
	}
	if after := accountRead(t, o.Stack, a); before-after != priced || priced <= 0 {
		t.Errorf("balance fell by %d µSEK, the records' prices sum to %d", before-after, priced)
	}
}
