package conformance

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/shared/apikey"
	"github.com/sekgate/gateway/shared/snapshot"
)

// A fleet on one host: one control plane and a data plane per region (se-sto in Sweden,
// eu-fra in Germany, us-any in the US), each node started with --country. An account is
// served only by nodes inside its residency policy and refused by the others with 403
// naming its region (the control plane's --region-urls, carried in every snapshot); usage from every node lands exactly once; a revoked key is refused
// by every node within a second.

var fleetURLs = map[string]string{"se": "https://se.gateway.example", "eu": "https://eu.gateway.example", "any": "https://gateway.example"}

// regionalNode starts a data plane of the ops stack in country and returns its base URL.
func (o *opsStack) regionalNode(t *testing.T, name, country string) string {
	t.Helper()
	addr, _ := freeAddr()
	if err := o.spawn("dataplane", name, []string{"GATEWAY_NODE_TOKEN=" + o.NodeToken},
		"--listen", addr, "--control-plane-url", o.CPURL, "--snapshot-public-key-file", o.PublicKey,
		"--node-id", name, "--data-dir", filepath.Join(o.dir, name), "--snapshot-wait", "10s",
		"--usage-batch-interval", "50ms", "--country", country, "--region", name); err != nil {
		t.Fatal(err)
	}
	o.wait(t, "http://"+addr+"/healthz")
	return "http://" + addr
}

// getAt and postAt send a request to the node at url instead of the stack's data plane.
func (o *opsStack) getAt(t *testing.T, url, path, key string) Response {
	t.Helper()
	prev := o.DataURL
	o.DataURL = url
	defer func() { o.DataURL = prev }()
	return o.Do(t, "GET", path, key, nil, nil)
}

func (o *opsStack) postAt(t *testing.T, url, path, key string, v any) Response {
	t.Helper()
	prev := o.DataURL
	o.DataURL = url
	defer func() { o.DataURL = prev }()
	return o.Post(t, path, key, v)
}

// fleetCPArgs gives the control plane the regional base URLs it puts in every snapshot.
var fleetCPArgs = []string{"--region-urls", "se=" + fleetURLs["se"] + ",eu=" + fleetURLs["eu"] + ",any=" + fleetURLs["any"]}

func TestFleet_RegionalNodesAdmitOnlyTheirPolicies(t *testing.T) {
	o := newOpsStack(t, fleetCPArgs...)
	o.stop(t, o.dp, false)
	nodes := map[string]string{
		"se-sto": o.regionalNode(t, "se-sto", "SE"),
		"eu-fra": o.regionalNode(t, "eu-fra", "DE"),
		"us-any": o.regionalNode(t, "us-any", "US"),
	}
	o.DataURL = nodes["se-sto"] // admits every policy: NewAccount waits for its keys there
	accts := map[string]Account{"se": o.NewAccount(t, "se", 100, modelChat), "eu": o.NewAccount(t, "eu", 100, modelChat),
		"any": o.NewAccount(t, "any", 100, modelChat)}

	served := map[string][]string{"se": {"se-sto"}, "eu": {"se-sto", "eu-fra"}, "any": {"se-sto", "eu-fra", "us-any"}}
	for policy, a := range accts {
		for node, url := range nodes {
			ok := strings.Contains(strings.Join(served[policy], ","), node)
			want := 403
			if ok {
				want = 200
			}
			// Each node has the key once it answers something other than 401.
			var r Response
			o.waitFor(t, node+" to know the key", func() bool {
				r = o.getAt(t, url, "/v1/models", a.Key)
				return r.Status != 401
			})
			if r.Status != want {
				t.Errorf("%s account at %s: %d %s, want %d", policy, node, r.Status, r.Body, want)
				continue
			}
			if ok {
				continue
			}
			var env struct {
				Error struct {
					Code string `json:"code"`
				} `json:"error"`
				DocURL string `json:"documentation_url"`
			}
			if json.Unmarshal(r.Body, &env) != nil || env.Error.Code != "residency_unsatisfiable" || env.DocURL != fleetURLs[policy] {
				t.Errorf("%s account at %s: %s, want residency_unsatisfiable naming %s", policy, node, r.Body, fleetURLs[policy])
			}
			if r := o.postAt(t, url, "/v1/chat/completions", a.Key, chatReq(modelChat)); r.Status != 403 {
				t.Errorf("%s account inference at %s: %d", policy, node, r.Status)
			}
		}
	}

	// Each node holds only the key hashes of the accounts it serves: its last-known-good
	// snapshot was built for its country and lists the other keys without their hash.
	countries := map[string]string{"se-sto": "SE", "eu-fra": "DE", "us-any": "US"}
	for node, country := range countries {
		var s snapshot.Snapshot
		o.waitFor(t, node+"'s snapshot with both keys", func() bool {
			b, err := os.ReadFile(filepath.Join(o.dir, node, "snapshot.json"))
			s = snapshot.Snapshot{}
			if err != nil || json.Unmarshal(b, &s) != nil {
				return false
			}
			n := 0
			for _, a := range accts {
				for _, k := range s.Keys {
					n += boolInt(k.ID == a.KeyID)
				}
				for _, k := range s.Elsewhere {
					n += boolInt(k.ID == a.KeyID)
				}
			}
			return n == len(accts)
		})
		if s.Country != country {
			t.Errorf("%s holds a snapshot built for %q, want %s", node, s.Country, country)
		}
		for policy, a := range accts {
			held := false
			for _, k := range s.Keys {
				held = held || k.Hash == apikey.Hash(a.Key)
			}
			if want := strings.Contains(strings.Join(served[policy], ","), node); held != want {
				t.Errorf("%s holds the key hash of the %s account: %v, want %v", node, policy, held, want)
			}
		}
	}

	// Every node reported its region and its spool's age; the control plane lists them.
	regions, spool := map[string]string{}, map[string]any{}
	for _, n := range o.Admin(t, "GET", "/admin/v1/nodes", nil)["data"].([]any) {
		m := n.(map[string]any)
		id, _ := m["node_id"].(string)
		regions[id], _ = m["region"].(string)
		spool[id] = m["spool_reported_at"]
	}
	for node := range nodes {
		if regions[node] != node {
			t.Errorf("node %s listed with region %q", node, regions[node])
		}
		if spool[node] == nil {
			t.Errorf("node %s listed without a reported spool age", node)
		}
	}

	// Usage from every node lands once: the eu account's at se-sto and eu-fra, the any
	// account's at all three; each record names the node's region.
	for _, policy := range []string{"eu", "any"} {
		var ids []string
		servedBy := map[string]string{} // request ID -> node
		for _, node := range served[policy] {
			for range 3 {
				r := o.postAt(t, nodes[node], "/v1/chat/completions", accts[policy].Key, chatReq(modelChat))
				if r.Status != 200 {
					t.Fatalf("%s account at %s: %d %s", policy, node, r.Status, r.Body)
				}
				ids = append(ids, r.Header.Get("X-Request-Id"))
				servedBy[ids[len(ids)-1]] = node
			}
		}
		var list struct {
			Data []map[string]any `json:"data"`
		}
		o.waitFor(t, "every node's records", func() bool {
			r := o.Do(t, "GET", "/v1/service/requests?limit=100", accts[policy].Key, nil, nil)
			list.Data = nil
			return r.Status == 200 && json.Unmarshal(r.Body, &list) == nil && len(list.Data) >= len(ids)
		})
		stillHolds(t, "no second copy of a record", func() bool {
			r := o.Do(t, "GET", "/v1/service/requests?limit=100", accts[policy].Key, nil, nil)
			var l struct {
				Data []map[string]any `json:"data"`
			}
			return r.Status == 200 && json.Unmarshal(r.Body, &l) == nil && len(l.Data) <= len(ids)
		})
		r := o.Do(t, "GET", "/v1/service/requests?limit=100", accts[policy].Key, nil, nil)
		list.Data = nil
		if r.Status != 200 || json.Unmarshal(r.Body, &list) != nil || len(list.Data) != len(ids) {
			t.Fatalf("%s records: %d %d of %d: %.300s", policy, r.Status, len(list.Data), len(ids), r.Body)
		}
		seen := map[string]int{}
		for _, rec := range list.Data {
			id, _ := rec["request_id"].(string)
			seen[id]++
			if rt, _ := rec["routing"].(map[string]any); rt == nil || rt["node_region"] != servedBy[id] {
				t.Errorf("request %s served by %s: routing %v, want node_region %s", id, servedBy[id], rec["routing"], servedBy[id])
			}
		}
		for _, id := range ids {
			if seen[id] != 1 {
				t.Errorf("request %s has %d records, want 1", id, seen[id])
			}
		}
	}

	// A key revoked through the admin API is refused on every node within a second.
	o.Admin(t, "POST", "/admin/v1/keys/"+accts["eu"].KeyID+"/revoke", nil)
	start := time.Now()
	for node, url := range nodes {
		o.waitFor(t, "revocation at "+node, func() bool {
			return o.getAt(t, url, "/v1/models", accts["eu"].Key).Status == http.StatusUnauthorized
		})
	}
	// Within a second is the aim; the bound leaves room for a busy machine and still
	// catches a revocation that waited for a node's 10 s snapshot poll to time out.
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("revocation reached every node after %v, want within 1s", d)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
