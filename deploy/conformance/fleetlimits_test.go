package conformance

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sekgate/gateway/internal/feedbus"
)

// Limits that hold for the fleet: three nodes behind a round-robin balancer share an
// account's limit of 10 requests/s through the control plane's fleet exchange, so 45
// requests/s get about 10/s admitted in all (each node alone would admit 10/s: 30/s). The
// same after a fourth node joins and one leaves; with the control plane and the start feed
// stopped every node keeps serving, enforces 1/3 of the limit (the last live count it
// heard) and says so in gateway_fleet_limits_fallback and gateway_start_feed_live. The
// nodes run with the default --limit-share-nodes 1.
//
// Tolerances, for a busy 2-core machine: counts are taken over 3 s windows that start 1.5 s
// or more after a change (three runs of the exchange, every 500 ms: shares have converged), by the
// time a request was sent. The fleet may admit at most 12.5/s (the limit plus 25 %: burst
// tokens left at a window's start and rounding bursts up per node) and must admit at least
// 6/s (so the limit is shared, not refused outright, even when the sender falls behind).

const (
	fleetRate     = 45   // requests/s sent, round robin
	fleetLimit    = 10.0 // the account's requests/s
	fleetMaxRate  = 12.5 // most admitted/s asserted
	fleetMinRate  = 6.0  // fewest admitted/s asserted
	fleetWindow   = 3 * time.Second
	fleetInterval = "500ms"
)

type limitNode struct {
	name, url, ops string
	cmd            *exec.Cmd
}

// limitNode starts a data plane with the fleet exchange every 500 ms and the start feed
// at feed. --limit-share-nodes stays 1: without the exchange each node would admit the
// full limit.
func (o *opsStack) limitNode(t *testing.T, name, feed string) *limitNode {
	t.Helper()
	addr, _ := freeAddr()
	ops, _ := freeAddr()
	if err := o.spawn("dataplane", name, []string{"GATEWAY_NODE_TOKEN=" + o.NodeToken},
		"--listen", addr, "--ops-listen", ops, "--control-plane-url", o.CPURL, "--snapshot-public-key-file", o.PublicKey,
		"--node-id", name, "--data-dir", filepath.Join(o.dir, name), "--snapshot-wait", "10s",
		"--usage-batch-interval", "50ms", "--fleet-interval", fleetInterval, "--start-feed-url", feed); err != nil {
		t.Fatal(err)
	}
	n := &limitNode{name: name, url: "http://" + addr, ops: "http://" + ops, cmd: o.procs[len(o.procs)-1]}
	o.wait(t, n.url+"/healthz")
	return n
}

// gauge reads a metric without labels from the node's /metrics; -1 when absent.
func (n *limitNode) gauge(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := http.Get(n.ops + "/metrics")
	if err != nil {
		t.Fatalf("%s metrics: %v", n.name, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

// load sends fleetRate requests/s round robin over nodes for warm+fleetWindow and returns
// the requests each node admitted among those sent in the last fleetWindow.
func load(t *testing.T, nodes []*limitNode, key string, body []byte, warm time.Duration) map[string]int {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	var mu sync.Mutex
	var wg sync.WaitGroup
	admitted, other := map[string]int{}, map[int]int{}
	start := time.Now()
	measureFrom, end := start.Add(warm), start.Add(warm+fleetWindow)
	tick := time.NewTicker(time.Second / fleetRate)
	defer tick.Stop()
	for i := 0; ; i++ {
		sent := <-tick.C
		if sent.After(end) {
			break
		}
		n := nodes[i%len(nodes)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", n.url+"/v1/chat/completions", strings.NewReader(string(body)))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			status := 0
			if err == nil {
				status = resp.StatusCode
				resp.Body.Close()
			}
			if sent.Before(measureFrom) {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			switch status {
			case 200:
				admitted[n.name]++
			case 429:
			default:
				other[status]++
			}
		}()
	}
	wg.Wait()
	if len(other) > 0 {
		t.Errorf("answers other than 200 and 429: %v", other)
	}
	return admitted
}

func checkFleetRate(t *testing.T, what string, admitted map[string]int) {
	t.Helper()
	total := 0
	for _, n := range admitted {
		total += n
	}
	rate := float64(total) / fleetWindow.Seconds()
	t.Logf("%s: %.1f requests/s admitted of %d/s sent (%v)", what, rate, fleetRate, admitted)
	if rate > fleetMaxRate || rate < fleetMinRate {
		t.Errorf("%s: %.1f requests/s admitted, want %.1f to %.1f (limit %.0f/s)", what, rate, fleetMinRate, fleetMaxRate, fleetLimit)
	}
}

func TestFleet_LimitsHoldForTheFleet(t *testing.T) {
	o := newOpsStack(t)
	o.stop(t, o.dp, false)
	busAddr, err := freeAddr() // a port no other process of the tests is given
	if err != nil {
		t.Fatal(err)
	}
	bus, err := feedbus.Start(busAddr, nil) // the nodes' start feed, as the control plane runs it
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	feed := bus.URL()
	nodes := []*limitNode{o.limitNode(t, "lim-1", feed), o.limitNode(t, "lim-2", feed), o.limitNode(t, "lim-3", feed)}
	o.DataURL = nodes[0].url
	a := o.NewAccount(t, "any", 1000, modelChat)
	o.Admin(t, "PATCH", "/admin/v1/accounts/"+a.ID, map[string]any{"limits": map[string]any{"requests_per_second": fleetLimit, "burst": 10}})
	body, _ := json.Marshal(chatReq(modelChat))
	for _, n := range nodes {
		o.waitFor(t, n.name+" to know the key", func() bool { return o.getAt(t, n.url, "/v1/models", a.Key).Status == 200 })
	}

	checkFleetRate(t, "3 nodes", load(t, nodes, a.Key, body, 2*time.Second))
	for _, n := range nodes {
		if v := n.gauge(t, "gateway_fleet_limits_fallback"); v != 0 {
			t.Errorf("%s: gateway_fleet_limits_fallback %v with the control plane up", n.name, v)
		}
		o.waitFor(t, n.name+" to hear every node on the start feed", func() bool { return n.gauge(t, "gateway_start_feed_live") == 1 })
	}

	nodes = append(nodes, o.limitNode(t, "lim-4", feed))
	o.waitFor(t, "lim-4 to know the key", func() bool { return o.getAt(t, nodes[3].url, "/v1/models", a.Key).Status == 200 })
	checkFleetRate(t, "a fourth node added", load(t, nodes, a.Key, body, 1500*time.Millisecond))
	if n := nodes[3].gauge(t, "gateway_fleet_nodes"); n != 4 {
		t.Errorf("lim-4 counts %v live nodes, want 4", n)
	}

	gone := nodes[0]
	nodes = nodes[1:]
	o.stop(t, gone.cmd, false)
	checkFleetRate(t, "lim-1 removed", load(t, nodes, a.Key, body, 1500*time.Millisecond))
	if n := nodes[0].gauge(t, "gateway_fleet_nodes"); n != 3 {
		t.Errorf("lim-2 counts %v live nodes after lim-1 left, want 3", n)
	}
	checkModes(t, o, map[string]string{"lim-1": "fallback", "lim-2": "shared", "lim-3": "shared", "lim-4": "shared"})

	// The control plane and the start feed stop: after three intervals every node enforces
	// 1/3 of the limit (the live count it last heard, not --limit-share-nodes 1), says so,
	// and keeps serving; off the feed, it says that too.
	o.stop(t, o.cp, false)
	bus.Close()
	admitted := load(t, nodes, a.Key, body, 2*time.Second)
	checkFleetRate(t, "control plane stopped", admitted)
	for _, n := range nodes {
		if v := n.gauge(t, "gateway_fleet_limits_fallback"); v != 1 {
			t.Errorf("%s: gateway_fleet_limits_fallback %v, want 1", n.name, v)
		}
		if v := n.gauge(t, "gateway_start_feed_live"); v != 0 {
			t.Errorf("%s: gateway_start_feed_live %v with the feed's server stopped, want 0", n.name, v)
		}
		// limit/3 over the window plus a burst of ceil(10/3) = 4.
		if got, most := admitted[n.name], int(fleetLimit/3*fleetWindow.Seconds())+4; got < 1 || got > most {
			t.Errorf("%s in its fallback admitted %d, want 1 to %d", n.name, got, most)
		}
	}
}

// checkModes compares the limits mode the admin API lists per node.
func checkModes(t *testing.T, o *opsStack, want map[string]string) {
	t.Helper()
	var l struct {
		Data []struct {
			NodeID     string  `json:"node_id"`
			LimitsMode *string `json:"limits_mode"`
		} `json:"data"`
	}
	r, err := o.admin("GET", "/admin/v1/nodes", nil)
	if err != nil || json.Unmarshal(r.Body, &l) != nil {
		t.Fatalf("nodes: %v %s", err, r.Body)
	}
	got := map[string]string{}
	for _, n := range l.Data {
		if n.LimitsMode != nil {
			got[n.NodeID] = *n.LimitsMode
		}
	}
	for id, m := range want {
		if got[id] != m {
			t.Errorf("node %s limits mode %q, want %q (all: %v)", id, got[id], m, got)
		}
	}
}
