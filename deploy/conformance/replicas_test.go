package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sekgate/gateway/deploy/tools/harness"
	"github.com/sekgate/gateway/internal/poll"
	"github.com/sekgate/gateway/shared/internalapi"
)

// Two control planes on one Postgres: two controlplane processes (same database, signing
// key and node tokens, each migrating at start) serve three nodes — one talking to each
// replica, one through a balancer that sends each of its calls to the replicas in turn —
// while clients keep sending, keys are created through both replicas' admin APIs, and each
// replica in turn is stopped (one killed, one drained) and started again. Every answered
// request has exactly one record, the balance fell by exactly the records' prices, no
// transaction was retried for a deadlock or serialization failure, and no node ever
// installed an older snapshot than it held, whichever replica it came from.

// cpReplica is a control plane of the ops stack that can be restarted on its addresses.
type cpReplica struct {
	name, addr, adminAddr string
	cmd                   *exec.Cmd
	starts                int
}

func (r *cpReplica) url() string      { return "http://" + r.addr }
func (r *cpReplica) adminURL() string { return "http://" + r.adminAddr }

// spawnReplica starts r (again) without waiting for it.
func (o *opsStack) spawnReplica(t *testing.T, r *cpReplica) {
	t.Helper()
	r.starts++
	if err := o.spawn("controlplane", fmt.Sprintf("%s-%d", r.name, r.starts),
		[]string{"GATEWAY_DATABASE_URL=" + o.dbURL, "GATEWAY_ADMIN_TOKEN=" + o.AdminToken, "GATEWAY_NODE_TOKENS=" + o.NodeToken},
		harness.ControlPlane{Listen: r.addr, AdminListen: r.adminAddr, SigningKeyFile: o.SigningKey}.Args()...); err != nil {
		t.Fatal(err)
	}
	r.cmd = o.procs[len(o.procs)-1]
}

// newReplicaStack starts a simulator and two control planes at once on one new database.
func newReplicaStack(t *testing.T) (*opsStack, [2]*cpReplica) {
	t.Helper()
	o := newOpsBase(t, "replicas", "adm_replicas_0123456789abcdef012345678", "node_replicas_0123456789abcdef012345678")
	var cps [2]*cpReplica
	for i := range cps {
		cps[i] = &cpReplica{name: fmt.Sprint("cp", i)}
		cps[i].addr, _ = freeAddr()
		cps[i].adminAddr, _ = freeAddr()
		o.spawnReplica(t, cps[i]) // both migrate the new database at once
	}
	for _, r := range cps {
		o.wait(t, r.url()+"/healthz")
		o.wait(t, r.adminURL()+"/healthz")
	}
	o.CPURL, o.AdminURL = cps[0].url(), cps[0].adminURL()
	o.loadDemoCatalog(t)
	return o, cps
}

// cpBalancer is a load balancer in front of the control planes: it sends each call to the
// next replica in turn, and a call whose connection was refused to the other one. It
// counts the snapshots (200 answers to snapshot polls) and usage replies each replica gave.
type cpBalancer struct {
	backends  [2]string // host:port
	next      atomic.Uint64
	transport http.RoundTripper
	snapshots [2]atomic.Int64
	usage     [2]atomic.Int64
}

func (b *cpBalancer) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	i := int(b.next.Add(1) % 2)
	var err error
	for range 2 {
		out := req.Clone(req.Context())
		out.URL.Scheme, out.URL.Host, out.Host = "http", b.backends[i], b.backends[i]
		out.Body = io.NopCloser(bytes.NewReader(body))
		var resp *http.Response
		if resp, err = b.transport.RoundTrip(out); err == nil {
			if resp.StatusCode == http.StatusOK {
				switch req.URL.Path {
				case internalapi.PathSnapshot:
					b.snapshots[i].Add(1)
				case internalapi.PathUsage:
					b.usage[i].Add(1)
				}
			}
			return resp, nil
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, err
		}
		i = 1 - i
	}
	return nil, err
}

// appliedVersions returns, per process log of a node, the versions of the snapshots it
// applied, in order, and the lines in which it refused a snapshot.
var appliedRe = regexp.MustCompile(`msg="snapshot applied" version=(\d+)`)

func appliedVersions(t *testing.T, dir, node string) (versions [][]int64, refused []string) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(dir, node+"-*.log"))
	for _, p := range logs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var vs []int64
		for _, line := range strings.Split(string(b), "\n") {
			if m := appliedRe.FindStringSubmatch(line); m != nil {
				v, _ := strconv.ParseInt(m[1], 10, 64)
				vs = append(vs, v)
			}
			if strings.Contains(line, "refusing snapshot") {
				refused = append(refused, line)
			}
		}
		versions = append(versions, vs)
	}
	return versions, refused
}

func TestFleet_TwoControlPlanesOnOnePostgres(t *testing.T) {
	o, cps := newReplicaStack(t)
	begin := time.Now() // the shared stack (binaries, Postgres) is up; this test's own starts
	lb := &cpBalancer{backends: [2]string{cps[0].addr, cps[1].addr},
		transport: &http.Transport{MaxIdleConnsPerHost: 16, ResponseHeaderTimeout: time.Minute}}
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(*httputil.ProxyRequest) {}, Transport: lb,
		ErrorLog: log.New(io.Discard, "", 0)}) // a replica going away mid-poll is expected
	var nodes []*fleetNode
	defer func() {
		// The nodes stop first: the balanced one flushes its usage through the balancer.
		for _, n := range nodes {
			o.stop(t, n.cmd, false)
		}
		proxy.CloseClientConnections()
		proxy.Close()
	}()
	nodes = []*fleetNode{
		o.newFleetNodeVia(t, "rep-a", "SE", cps[0].url()),
		o.newFleetNodeVia(t, "rep-b", "SE", cps[1].url()),
		o.newFleetNodeVia(t, "rep-ab", "SE", proxy.URL),
	}
	o.DataURL = nodes[0].url()
	a := o.NewAccount(t, "se", 100, modelChat)
	for _, n := range nodes[1:] {
		o.DataURL = n.url()
		o.waitFor(t, "the key at "+n.name, func() bool { return o.Do(t, "GET", "/v1/models", a.Key, nil, nil).Status == 200 })
		o.waitSpendable(t, a)
	}
	o.DataURL = nodes[0].url()
	before := accountRead(t, o.Stack, a)
	t.Logf("stack ready after %v", time.Since(begin).Round(time.Millisecond))

	// Steady load: three clients sending to the nodes in turn, one request after another.
	body, _ := json.Marshal(chatReq(modelChat))
	client := &http.Client{Timeout: 20 * time.Second}
	type outcome struct {
		node, status int
		id           string
		err          error
	}
	var mu sync.Mutex
	var outcomes []outcome
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var turn atomic.Uint64
	for range 3 {
		wg.Go(func() {
			for ctx.Err() == nil {
				n := int(turn.Add(1) % uint64(len(nodes)))
				oc := outcome{node: n}
				req, _ := http.NewRequest("POST", nodes[n].url()+"/v1/chat/completions", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+a.Key)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if oc.err = err; err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					oc.status, oc.id = resp.StatusCode, resp.Header.Get("X-Request-Id")
				}
				mu.Lock()
				outcomes = append(outcomes, oc)
				mu.Unlock()
				select { // a short pause keeps the load light
				case <-ctx.Done():
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
	}
	// Structure changes while nodes switch replicas: a new key every 200 ms, created
	// through the replicas' admin APIs in turn (the other one while a replica is down).
	var lastKey atomic.Value
	var keys atomic.Int64
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			for j := range 2 {
				adm := harness.Admin{URL: cps[(i+j)%2].adminURL(), Token: o.AdminToken}
				r, err := adm.Do(context.Background(), "POST", "/admin/v1/accounts/"+a.ID+"/keys", map[string]any{"name": "replicas"})
				if err == nil && r.Status/100 == 2 {
					var k struct {
						Secret string `json:"secret"`
					}
					if json.Unmarshal(r.Body, &k) == nil && k.Secret != "" {
						lastKey.Store(k.Secret)
						keys.Add(1)
					}
					break
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	})

	// steady waits until the load has answered n more requests and k more keys were
	// created: it counts, not time, so that a busy machine only makes the test slower.
	steady := func(what string, n int, k int64) {
		t.Helper()
		mu.Lock()
		from, fromKeys := len(outcomes), keys.Load()
		mu.Unlock()
		poll.Until(t, time.Minute, fmt.Sprintf("%d requests and %d keys %s", n, k, what), func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(outcomes) >= from+n && keys.Load() >= fromKeys+k
		})
	}

	// Each replica in turn leaves and comes back while the load goes on: cp1 is killed
	// (SIGKILL: in-flight batches may have committed unanswered), cp0 drains (SIGTERM, exit 0).
	steady("before a replica leaves", 100, 5)
	for i, kill := range []bool{true, false} {
		r := cps[1-i]
		start := time.Now()
		if kill {
			o.stop(t, r.cmd, true)
		} else {
			if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := o.exited(t, r.cmd, 10*time.Second); code != 0 {
				t.Fatalf("%s exited %d after SIGTERM", r.name, code)
			}
		}
		steady("while "+r.name+" is away", 60, 3) // nodes keep serving; rep-b or rep-a spools
		o.spawnReplica(t, r)
		o.wait(t, r.url()+"/healthz")
		t.Logf("%s away for %v (killed: %v)", r.name, time.Since(start).Round(time.Millisecond), kill)
		steady("after "+r.name+" is back", 100, 5)
	}
	cancel()
	wg.Wait()

	ids := map[string]bool{}
	served := make([]int, len(nodes))
	for _, oc := range outcomes {
		if oc.err != nil || oc.status != 200 || oc.id == "" {
			t.Errorf("request failed: node %s, status %d, id %q, err %v", nodes[oc.node].name, oc.status, oc.id, oc.err)
			continue
		}
		if ids[oc.id] {
			t.Errorf("request ID %s answered twice", oc.id)
		}
		ids[oc.id] = true
		served[oc.node]++
	}
	t.Logf("%d requests (%v per node), %d keys created; through the balancer: snapshots %d/%d, usage replies %d/%d from cp0/cp1",
		len(outcomes), served, keys.Load(), lb.snapshots[0].Load(), lb.snapshots[1].Load(), lb.usage[0].Load(), lb.usage[1].Load())

	// The newest key reaches every node: both replicas' snapshots are taken.
	if k, _ := lastKey.Load().(string); k != "" {
		for _, n := range nodes {
			o.waitFor(t, "the newest key at "+n.name, func() bool { return o.getAt(t, n.url(), "/v1/models", k).Status == 200 })
		}
	} else {
		t.Error("no key was created during the run")
	}

	t.Logf("the newest key at every node after %v", time.Since(begin).Round(time.Millisecond))

	// Exactly one record per answered request; the balance fell by exactly their prices.
	o.checkOneRecordEach(t, a, ids, before)

	t.Logf("records and balance checked after %v", time.Since(begin).Round(time.Millisecond))

	// No control plane retried a transaction for a deadlock or serialization failure.
	logs, _ := filepath.Glob(filepath.Join(o.dir, "cp*.log"))
	if len(logs) != 4 {
		t.Errorf("control-plane logs %v, want two processes per replica", logs)
	}
	for _, p := range logs {
		b, _ := os.ReadFile(p)
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "transaction retried") || strings.Contains(line, "deadlock") {
				t.Errorf("%s: %s", filepath.Base(p), line)
			}
		}
	}

	// Every node applied snapshots from its replicas in increasing versions and refused none;
	// the node behind the balancer got snapshots and usage replies from both replicas.
	for _, n := range nodes {
		versions, refused := appliedVersions(t, o.dir, n.name)
		for _, l := range refused {
			t.Errorf("%s refused a snapshot: %s", n.name, l)
		}
		for _, vs := range versions {
			for i := 1; i < len(vs); i++ {
				if vs[i] < vs[i-1] {
					t.Errorf("%s applied snapshot %d after %d: %v", n.name, vs[i], vs[i-1], vs)
					break
				}
			}
		}
		t.Logf("%s applied snapshot versions %v", n.name, versions)
	}
	for i := range 2 {
		if lb.snapshots[i].Load() == 0 || lb.usage[i].Load() == 0 {
			t.Errorf("the balanced node got %d snapshots and %d usage replies from cp%d, want some of each",
				lb.snapshots[i].Load(), lb.usage[i].Load(), i)
		}
	}
}
