package conformance

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sekgate/gateway/deploy/tools/harness"
	"github.com/sekgate/gateway/deploy/tools/proc"
)

// A route whose credential the node lacks and a route whose server is down: the catalogue
// check warns before loading, the node reports both at once, the admin API and gatewayctl
// routes list show them per node, a customer of the first gets a configuration error that
// does not invite retries, and adding the credential to the node's credentials file (with
// SIGHUP) heals it without a restart.
func TestOperations_MisconfiguredRouteIsVisibleAndHeals(t *testing.T) {
	o := newOpsBase(t, "confighealth", "adm_cfghealth_0123456789abcdef01234567", "node_cfghealth_0123456789abcdef01234567")
	o.cpAddr, _ = freeAddr()
	o.adminAddr, _ = freeAddr()
	o.dpAddr, _ = freeAddr()
	o.CPURL, o.AdminURL, o.DataURL = "http://"+o.cpAddr, "http://"+o.adminAddr, "http://"+o.dpAddr
	o.startCP(t)
	creds := filepath.Join(o.dir, "credentials.env")
	if err := os.WriteFile(creds, []byte("# route credentials\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := o.spawn("dataplane", "dataplane-cfg", []string{"GATEWAY_NODE_TOKEN=" + o.NodeToken},
		harness.DataPlane{Listen: o.dpAddr, ControlPlaneURL: o.CPURL, PublicKeyFile: o.PublicKey, NodeID: "cfg-1", DataDir: filepath.Join(o.dir, "node")}.Args(
			"--snapshot-wait", "10s", "--usage-batch-interval", "50ms", "--credentials-file", creds)...); err != nil {
		t.Fatal(err)
	}
	node := o.procs[len(o.procs)-1]
	o.wait(t, o.DataURL+"/healthz")
	o.loadDemoCatalog(t)
	o.waitFor(t, "the node's first report", func() bool {
		for _, n := range o.Admin(t, "GET", "/admin/v1/nodes", nil)["data"].([]any) {
			if m := n.(map[string]any); m["node_id"] == "cfg-1" && m["credentials"] != nil {
				return true
			}
		}
		return false
	})

	dead, _ := freeAddr() // nothing listens here
	cat := demoCatalog(o.SimURL+"/v1", o.SimURL+"/v1", o.SimURL+"/v1")
	model := func(id, route, base, ref string) map[string]any {
		r := map[string]any{"id": route, "provider": "vllm", "base_url": base, "protocols": []string{"/v1/chat/completions"},
			"region": "se-sto-1", "country": "SE", "priority": 0, "weight": 1}
		if ref != "" {
			r["credentials_ref"] = ref
		}
		return map[string]any{"id": id, "aliases": []string{}, "endpoint": "/v1/chat/completions", "created": 1721347200,
			"context_tokens": 8192, "input_ore_per_million_tokens": 100, "output_ore_per_million_tokens": 200, "routes": []any{r}}
	}
	cat["models"] = append(cat["models"].([]any),
		model("cfg-model", "cfg-se", o.SimURL+"/v1", "env:GATEWAY_CREDENTIAL_CFG"),
		model("unreach-model", "unreach-se", "http://"+dead+"/v1", ""))

	// The check before loading warns about the credential the node lacks.
	r, err := o.admin("PUT", "/admin/v1/catalog?dry_run=true", cat)
	if err != nil || r.Status != 200 || !strings.Contains(string(r.Body), "route cfg-se: credentials_ref env:GATEWAY_CREDENTIAL_CFG is not set on node cfg-1") {
		t.Fatalf("dry run: %v %d %s", err, r.Status, r.Body)
	}
	if r, err := o.admin("PUT", "/admin/v1/catalog", cat); err != nil || r.Status != 200 || !strings.Contains(string(r.Body), "warnings") {
		t.Fatalf("load: %v %d %s", err, r.Status, r.Body)
	}
	problems := func() map[string]any {
		out := map[string]any{}
		for _, rt := range o.Admin(t, "GET", "/admin/v1/routes", nil)["data"].([]any) {
			m := rt.(map[string]any)
			if p := m["problems"].(map[string]any); len(p) > 0 {
				out[m["id"].(string)] = p["cfg-1"]
			}
		}
		return out
	}
	o.waitFor(t, "the node's report of both routes", func() bool {
		p := problems()
		return p["cfg-se"] == "credential_missing" && p["unreach-se"] == "unreachable"
	})
	ctl := exec.Command(filepath.Join(binDir, "gatewayctl"), "routes", "list")
	ctl.Env = append(proc.ChildEnv(), "GATEWAY_ADMIN_URL="+o.AdminURL, "GATEWAY_ADMIN_TOKEN="+o.AdminToken)
	if out, err := ctl.CombinedOutput(); err != nil || !strings.Contains(string(out), "cfg-1: credential_missing") || !strings.Contains(string(out), "cfg-1: unreachable") {
		t.Errorf("gatewayctl routes list: %v\n%s", err, out)
	}

	// The customer is told it is a configuration problem, not to retry shortly (the
	// interface's 503 carries Retry-After: here a long one).
	a := o.NewAccount(t, "se", 100, "cfg-model")
	chat := func() Response {
		body := []byte(`{"model":"cfg-model","messages":[{"role":"user","content":"Hej"}]}`)
		return o.Do(t, "POST", "/v1/chat/completions", a.Key, nil, body)
	}
	if r := chat(); r.Status != http.StatusServiceUnavailable || !strings.Contains(string(r.Body), "misconfigured") ||
		r.Header.Get("Retry-After") != "300" {
		t.Fatalf("request on the misconfigured route: %d %s %v", r.Status, r.Body, r.Header)
	}

	// The operator adds the credential; SIGHUP makes the node read it without a restart.
	if err := os.WriteFile(creds, []byte("GATEWAY_CREDENTIAL_CFG=sk-local\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := node.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	o.waitFor(t, "the route healed", func() bool { _, bad := problems()["cfg-se"]; return !bad })
	if r := chat(); r.Status != 200 {
		t.Fatalf("after the credential was added: %d %s", r.Status, r.Body)
	}
	if node.ProcessState != nil {
		t.Fatal(fmt.Sprint("the node restarted: ", node.ProcessState))
	}
}
