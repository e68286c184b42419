package conformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Graceful shutdown of a data plane (SIGTERM, as Kubernetes and systemd send it): readiness
// goes first while the node still serves, then the listener closes, open streams run to
// their end within --drain-timeout (or end with an error event and a cancelled record
// when it runs out), the spool is delivered to the control plane, and the process exits 0.

// drainNode starts a data plane of the ops stack with an ops listener and the given
// shutdown flags on a data directory of its own, and returns it with its ops URL.
func (o *opsStack) drainNode(t *testing.T, name string, flags ...string) (*exec.Cmd, string) {
	t.Helper()
	opsAddr, _ := freeAddr()
	args := append([]string{"--listen", o.dpAddr, "--control-plane-url", o.CPURL, "--snapshot-public-key-file", o.PublicKey, "--node-id", name,
		"--data-dir", filepath.Join(o.dir, name), "--snapshot-wait", "10s", "--usage-batch-interval", "50ms",
		"--ops-listen", opsAddr}, flags...)
	if err := o.spawn("dataplane", name, []string{"GATEWAY_NODE_TOKEN=" + o.NodeToken}, args...); err != nil {
		t.Fatal(err)
	}
	p := o.procs[len(o.procs)-1]
	o.wait(t, "http://"+opsAddr+"/readyz")
	return p, "http://" + opsAddr
}

// exited waits for p to exit after a signal and returns its exit code, forgetting it.
func (o *opsStack) exited(t *testing.T, p *exec.Cmd, within time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()
	select {
	case <-done:
	case <-time.After(within):
		_ = p.Process.Kill()
		<-done
		t.Fatalf("node still running %v after SIGTERM", within)
	}
	for i, q := range o.procs {
		if q == p {
			o.procs = append(o.procs[:i], o.procs[i+1:]...)
			break
		}
	}
	return p.ProcessState.ExitCode()
}

// openStream starts a paced chat stream and returns it after its first event.
func openStream(t *testing.T, url, key string, tokens int, perSecond float64) (*http.Response, *bufio.Reader) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": modelChat, "stream": true, "max_tokens": tokens + 10,
		"messages": []any{map[string]any{"role": "user", "content": "Berätta en saga."}},
		"sim":      map[string]any{"tokens_per_second": perSecond, "output_tokens": tokens}})
	req, _ := http.NewRequest("POST", url+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first event: %q %v", line, err)
	}
	return resp, br
}

// recordsVia lists the account's records through a fresh node (empty data directory), so
// whatever it shows reached the control plane from the node that was stopped.
func (o *opsStack) recordsVia(t *testing.T, key string, want int) map[string]map[string]any {
	t.Helper()
	p, _ := o.drainNode(t, fmt.Sprintf("reader-%d", len(o.procs)))
	defer o.stop(t, p, false)
	byID := map[string]map[string]any{}
	o.waitFor(t, "the records at the control plane", func() bool {
		r := o.Do(t, "GET", "/v1/service/requests?limit=100", key, nil, nil)
		var list struct {
			Data []map[string]any `json:"data"`
		}
		if r.Status != 200 || json.Unmarshal(r.Body, &list) != nil {
			return false
		}
		for _, rec := range list.Data {
			id, _ := rec["request_id"].(string)
			byID[id] = rec
		}
		return len(list.Data) >= want
	})
	return byID
}

func TestOperations_GracefulShutdownDrainsStreamsAndSpool(t *testing.T) {
	o := newOpsStack(t)
	o.stop(t, o.dp, false)
	node, opsURL := o.drainNode(t, "drain-1", "--shutdown-delay", "1s", "--drain-timeout", "30s")
	a := o.NewAccount(t, "se", 100, modelChat)

	// A stream of about 2.5 s is open when SIGTERM arrives.
	resp, br := openStream(t, o.DataURL, a.Key, 25, 10)
	ids := []string{resp.Header.Get("X-Request-Id")}
	sent := time.Now()
	if err := node.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	o.waitFor(t, "readiness to fail", func() bool {
		r, err := http.Get(opsURL + "/readyz")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == 503
	})
	// Still inside --shutdown-delay: the node serves new requests.
	if time.Since(sent) < 800*time.Millisecond {
		r := o.chat(t, a.Key)
		if r.Status != 200 {
			t.Fatalf("request during the shutdown delay: %d %s", r.Status, r.Body)
		}
		ids = append(ids, r.Header.Get("X-Request-Id"))
	} else {
		t.Fatalf("readiness failed only %v after SIGTERM", time.Since(sent))
	}
	// After the delay the listener is closed, while the stream runs on.
	o.waitFor(t, "the listener to close", func() bool {
		c, err := net.DialTimeout("tcp", o.dpAddr, time.Second)
		if err != nil {
			return true
		}
		c.Close()
		return false
	})
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("stream cut: %v", err)
	}
	if !strings.Contains(string(rest), "data: [DONE]") || strings.Contains(string(rest), "not_ready") {
		t.Fatalf("stream did not run to its end: %.300s", rest)
	}
	if code := o.exited(t, node, 20*time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	recs := o.recordsVia(t, a.Key, len(ids))
	for _, id := range ids {
		if rec, ok := recs[id]; !ok || rec["result"] != "ok" {
			t.Errorf("request %s: record %v, want result ok delivered before the node exited", id, rec)
		}
	}
}

func TestOperations_DrainTimeoutEndsStreamsRecordedCancelled(t *testing.T) {
	o := newOpsStack(t)
	o.stop(t, o.dp, false)
	node, _ := o.drainNode(t, "drain-2", "--shutdown-delay", "0s", "--drain-timeout", "1s")
	a := o.NewAccount(t, "se", 100, modelChat)

	resp, br := openStream(t, o.DataURL, a.Key, 200, 2) // 100 s: outlives the drain timeout
	id := resp.Header.Get("X-Request-Id")
	if err := node.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("stream cut without its error event: %v", err)
	}
	if !strings.Contains(string(rest), `"code":"not_ready"`) || strings.Contains(string(rest), "[DONE]") {
		t.Fatalf("stream end: %.300s", rest)
	}
	if code := o.exited(t, node, 20*time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	rec := o.recordsVia(t, a.Key, 1)[id]
	if rec == nil || rec["result"] != "cancelled" {
		t.Fatalf("record %v, want result cancelled", rec)
	}
	if p, _ := rec["price_micro_sek"].(float64); p <= 0 {
		t.Errorf("the delivered part is not charged: %v", rec)
	}
}
