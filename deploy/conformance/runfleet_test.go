package conformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sekgate/gateway/deploy/tools/proc"
	"github.com/sekgate/gateway/internal/poll"
)

// TestFleet_MakeRunFleet runs deploy/local/run-fleet.sh (make run-fleet) on free ports and a
// directory of its own: the fleet comes up, .data/fleet.env (here in the test's directory)
// lists the three regions' base URLs (two nodes in Stockholm) and the demo keys, an se
// account is served by both Stockholm nodes and refused in the US naming Stockholm's URL,
// the Stockholm nodes share their pool of two simulators and each enforces half of the
// default limits, an eu account is served in Frankfurt and refused in the US, gatewayctl
// lists the four nodes, and SIGTERM stops everything the script started.
func TestFleet_MakeRunFleet(t *testing.T) {
	getStack(t) // builds the binaries
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if os.Geteuid() == 0 {
		// The script runs Postgres as the postgres user, which must reach its directory
		// (the script opens the data directory and its parent; the test's own parent is
		// private).
		if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
			t.Fatal(err)
		}
	}
	envFile := filepath.Join(dir, "fleet.env")
	env := append(proc.ChildEnv(), "BIN="+binDir, "GATEWAY_FLEET_DATA="+filepath.Join(dir, "fleet"), "GATEWAY_FLEET_ENV="+envFile)
	ports, taken := map[string]string{}, map[string]bool{}
	for _, name := range []string{"PG", "CP", "ADMIN", "CP_OPS", "SE", "EU", "US", "SE_OPS", "EU_OPS", "US_OPS", "SE_SIM", "EU_SIM", "US_SIM", "SE2", "SE2_OPS", "SE_SIM2", "FEED"} {
		// Each free port is closed again before the next is asked for, so the system may
		// hand one out twice: a second listener on it would fail to start, and requests
		// meant for it would reach the first.
		for ports[name] == "" || taken[ports[name]] {
			addr, err := freeAddr()
			if err != nil {
				t.Fatal(err)
			}
			_, ports[name], _ = net.SplitHostPort(addr)
		}
		taken[ports[name]] = true
		env = append(env, "GATEWAY_FLEET_"+name+"_PORT="+ports[name])
	}
	var out bytes.Buffer
	cmd := exec.Command(filepath.Join(root, "deploy", "local", "run-fleet.sh"))
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = root, env, &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped { // a failed test: the script's trap stops its processes
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
		}
		if t.Failed() {
			t.Logf("run-fleet.sh output:\n%s", out.String())
		}
	})

	deadline := time.Now().Add(3 * time.Minute)
	for !strings.Contains(out.String(), "Fleet is up") {
		select {
		case err := <-done:
			stopped = true
			t.Fatalf("run-fleet.sh exited before the fleet was up: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the fleet was not up within 3 minutes")
		}
	}
	vars := map[string]string{}
	f, err := os.Open(envFile)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && !strings.HasPrefix(k, "#") {
			vars[k] = v
		}
	}
	f.Close()
	for k, port := range map[string]string{"GATEWAY_FLEET_SE_STO_URL": ports["SE"], "GATEWAY_FLEET_SE_STO_2_URL": ports["SE2"],
		"GATEWAY_FLEET_EU_FRA_URL": ports["EU"], "GATEWAY_FLEET_US_ANY_URL": ports["US"]} {
		if vars[k] != "http://127.0.0.1:"+port {
			t.Errorf("%s = %q, want http://127.0.0.1:%s", k, vars[k], port)
		}
	}
	// The console is up with an operator to log in as, and its URL is in the env file.
	if want := "http://127.0.0.1:" + ports["ADMIN"] + "/console/"; vars["GATEWAY_CONSOLE_URL"] != want {
		t.Errorf("GATEWAY_CONSOLE_URL = %q, want %q", vars["GATEWAY_CONSOLE_URL"], want)
	}
	ops := exec.Command(filepath.Join(binDir, "gatewayctl"), "--json", "operators", "list")
	ops.Env = append(proc.ChildEnv(), "GATEWAY_ADMIN_URL="+vars["GATEWAY_ADMIN_URL"], "GATEWAY_ADMIN_TOKEN="+vars["GATEWAY_ADMIN_TOKEN"])
	if b, err := ops.CombinedOutput(); err != nil || !strings.Contains(string(b), `"demo"`) {
		t.Errorf("no console operator demo: %v %s", err, b)
	}
	chat := func(base, key string) (int, string) {
		body, _ := json.Marshal(chatReq("llama-3.1-8b-instruct"))
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var env struct {
			DocURL string `json:"documentation_url"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&env)
		return resp.StatusCode, env.DocURL
	}
	se, eu, us := vars["GATEWAY_FLEET_SE_STO_URL"], vars["GATEWAY_FLEET_EU_FRA_URL"], vars["GATEWAY_FLEET_US_ANY_URL"]
	for _, c := range []struct {
		who, at, key string
		status       int
		doc          string
	}{
		{"se account at se-sto", se, vars["GATEWAY_FLEET_SE_KEY"], 200, ""},
		{"se account at se-sto-2", vars["GATEWAY_FLEET_SE_STO_2_URL"], vars["GATEWAY_FLEET_SE_KEY"], 200, ""},
		{"se account at us-any", us, vars["GATEWAY_FLEET_SE_KEY"], 403, se},
		{"eu account at eu-fra", eu, vars["GATEWAY_FLEET_EU_KEY"], 200, ""},
		{"eu account at us-any", us, vars["GATEWAY_FLEET_EU_KEY"], 403, eu},
		{"any account at us-any", us, vars["GATEWAY_FLEET_ANY_KEY"], 200, ""},
	} {
		if status, doc := chat(c.at, c.key); status != c.status || doc != c.doc {
			t.Errorf("%s: %d naming %q, want %d naming %q", c.who, status, doc, c.status, c.doc)
		}
	}
	sharedPool(t, []string{se, vars["GATEWAY_FLEET_SE_STO_2_URL"]}, vars["GATEWAY_FLEET_SE_KEY"],
		[]string{ports["SE_SIM"], ports["SE_SIM2"]})
	// Stockholm's two nodes hear each other on the control plane's start feed.
	for name, p := range map[string]string{"se-sto": ports["SE_OPS"], "se-sto-2": ports["SE2_OPS"]} {
		n := &limitNode{name: name, ops: "http://127.0.0.1:" + p}
		if !poll.Wait(30*time.Second, func() bool { return n.gauge(t, "gateway_start_feed_live") == 1 }) {
			t.Errorf("%s is not live on the start feed", name)
		}
	}
	// The control plane knows it from their fleet reports: gatewayctl shows it.
	if !poll.Wait(30*time.Second, func() bool {
		c := exec.Command(filepath.Join(binDir, "gatewayctl"), "--json", "nodes", "list")
		c.Env = append(proc.ChildEnv(), "GATEWAY_ADMIN_URL="+vars["GATEWAY_ADMIN_URL"], "GATEWAY_ADMIN_TOKEN="+vars["GATEWAY_ADMIN_TOKEN"])
		b, err := c.Output()
		var l struct {
			Data []struct {
				NodeID    string  `json:"node_id"`
				StartFeed *string `json:"start_feed"`
			} `json:"data"`
		}
		if err != nil || json.Unmarshal(b, &l) != nil {
			return false
		}
		live := 0
		for _, n := range l.Data {
			if (n.NodeID == "se-sto" || n.NodeID == "se-sto-2") && n.StartFeed != nil && *n.StartFeed == "live" {
				live++
			}
		}
		return live == 2
	}) {
		t.Error("gatewayctl nodes list does not show both Stockholm nodes live on the start feed")
	}
	ctl := exec.Command(filepath.Join(binDir, "gatewayctl"), "nodes", "list")
	ctl.Env = append(proc.ChildEnv(), "GATEWAY_ADMIN_URL="+vars["GATEWAY_ADMIN_URL"], "GATEWAY_ADMIN_TOKEN="+vars["GATEWAY_ADMIN_TOKEN"])
	list, err := ctl.CombinedOutput()
	if err != nil {
		t.Fatalf("gatewayctl nodes list: %v\n%s", err, list)
	}
	for _, node := range []string{"se-sto", "se-sto-2", "eu-fra", "us-any"} {
		if !strings.Contains(string(list), node) {
			t.Errorf("gatewayctl nodes list has no %s:\n%s", node, list)
		}
	}

	// SIGTERM (Ctrl-C does the same) stops everything it started.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		stopped = true
		if err != nil {
			t.Errorf("run-fleet.sh after SIGTERM: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("run-fleet.sh still running 60s after SIGTERM")
	}
	for _, p := range []string{ports["SE"], ports["EU"], ports["US"], ports["CP"], ports["PG"]} {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+p, time.Second); err == nil {
			c.Close()
			t.Errorf("port %s still open after the script stopped", p)
		}
	}
}

// sharedPool sends 16 unique prompts (each its own prefix key, so rendezvous hashing
// spreads them over the pool) of an se account through each Stockholm node, back to back,
// and checks that each node's requests reach both simulators of the pool; then it checks
// that the two nodes together hold the account's default limits (10/s, burst 20), however
// the fleet exchange splits them: 40 requests at once, 20 through each node, are answered
// 429 in part.
func sharedPool(t *testing.T, nodes []string, key string, sims []string) {
	t.Helper()
	for _, n := range nodes {
		before := make([]int64, len(sims))
		for i, p := range sims {
			before[i] = simRequests(t, p)
		}
		for i := 0; i < 16; {
			switch status := postChat(t, n, key, fmt.Sprintf("Hej %d from %s", i, n)); status {
			case 200:
				i++
			case 429:
				// The real node's token bucket refills in real time: wait for a token
				// before sending the request again.
				time.Sleep(250 * time.Millisecond)
			default:
				t.Fatalf("se account at %s: %d", n, status)
			}
		}
		for i, p := range sims {
			if got := simRequests(t, p) - before[i]; got == 0 {
				t.Errorf("simulator on port %s served none of %s's 16 requests", p, n)
			}
		}
	}
	var wg sync.WaitGroup
	statuses := make(chan int, 40)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := chatStatus(nodes[i%len(nodes)], key, fmt.Sprintf("Burst %d", i))
			if err != nil {
				t.Error(err)
			}
			statuses <- st
		}()
	}
	wg.Wait()
	close(statuses)
	counts := map[int]int{}
	for st := range statuses {
		counts[st]++
	}
	if counts[429] == 0 || counts[200]+counts[429] != 40 {
		t.Errorf("40 requests at once through two nodes: %v; want some 429s (the account's burst is 20 for the fleet)", counts)
	}
}

// postChat posts a chat request of content and returns the status.
func postChat(t *testing.T, base, key, content string) int {
	t.Helper()
	st, err := chatStatus(base, key, content)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// chatStatus posts a chat request of content and returns the status (for goroutines,
// which must not stop the test).
func chatStatus(base, key, content string) (int, error) {
	body, _ := json.Marshal(map[string]any{"model": "llama-3.1-8b-instruct",
		"messages": []any{map[string]any{"role": "user", "content": content}}})
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// simRequests reads a simulator's request count (GET /sim/stats).
func simRequests(t *testing.T, port string) int64 {
	t.Helper()
	resp, err := http.Get("http://127.0.0.1:" + port + "/sim/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Requests int64 `json:"requests"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st.Requests
}
