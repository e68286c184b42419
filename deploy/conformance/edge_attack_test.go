package conformance

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sekgate/gateway/deploy/tools/proc"
	"github.com/sekgate/gateway/internal/poll"
)

// node is an extra data-plane process on the stack's control plane, started with flags of
// its own (short edge timeouts), for tests that would disturb the shared node.
type node struct {
	URL string
	cmd *exec.Cmd
}

func startNode(t *testing.T, s *Stack, name string, flags ...string) *node {
	t.Helper()
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(s.dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--listen", addr, "--control-plane-url", s.CPURL, "--snapshot-public-key-file", s.PublicKey, "--node-id", name,
		"--data-dir", filepath.Join(s.dir, name), "--snapshot-wait", "10s", "--usage-batch-interval", "50ms"}, flags...)
	cmd := exec.Command(filepath.Join(binDir, "dataplane"), args...)
	cmd.Env = append(os.Environ(), "GATEWAY_NODE_TOKEN="+s.NodeToken)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n := &node{URL: "http://" + addr, cmd: cmd}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		resp, err := http.Get(n.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return n
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("node %s did not start (log %s)", name, logf.Name())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// rssBytes is the resident set size of process pid.
func rssBytes(t *testing.T, pid int) int64 {
	t.Helper()
	m, err := proc.ReadMemory(pid)
	if err != nil {
		t.Fatal(err)
	}
	return m.RSS
}

// TestEdge_AttackBoundedMemory: 2,000 connections that declare an 8 MiB body and send one
// byte of it, and 2,000 that drip their headers (slowloris), against a real data-plane
// process: its RSS stays under 256 MiB, every attack connection is closed (the keyless
// body senders with a 401 as soon as their first byte arrives, since the data plane
// authenticates before it reads a body; the others by the timeouts), and a legitimate
// client is served throughout. The attack comes from 40 loopback addresses
// (100 connections each, the default per-address cap); the client from another.
func TestEdge_AttackBoundedMemory(t *testing.T) {
	s, acct := sharedAccount(t)
	const (
		bodyConns   = 2000
		lorisConns  = 2000
		sources     = 40
		timeout     = 3 * time.Second
		maxRSS      = 256 << 20
		closeWithin = 25 * time.Second
	)
	n := startNode(t, s, "attacked", "--header-timeout", timeout.String(), "--body-idle-timeout", timeout.String(),
		"--max-conns", "10000")
	pid := n.cmd.Process.Pid
	addr := strings.TrimPrefix(n.URL, "http://")
	client := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{
		LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, 1)}}).DialContext}, Timeout: 20 * time.Second}
	defer client.CloseIdleConnections()
	legit := func() error {
		req, _ := http.NewRequest("POST", n.URL+"/v1/chat/completions", strings.NewReader(
			`{"model":"`+modelChat+`","messages":[{"role":"user","content":"Hej"}],"max_tokens":4}`))
		req.Header.Set("Authorization", "Bearer "+acct.Key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d: %s", resp.StatusCode, b)
		}
		return nil
	}
	// The node has synced the key when it serves the client.
	var err error
	if !poll.Wait(15*time.Second, func() bool { err = legit(); return err == nil }) {
		t.Fatalf("legitimate request before the attack: %v", err)
	}
	base := rssBytes(t, pid)

	var (
		peak               atomic.Int64
		opened, dialFailed atomic.Int64
		closedEarly        atomic.Int64 // closed before the timeout could have fired
		closedByServer     atomic.Int64
		notClosed          atomic.Int64
		answered408        atomic.Int64
	)
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if r := rssBytes(t, pid); r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()

	attack := func(i int, first []byte, drip bool) {
		src := &net.TCPAddr{IP: net.IPv4(127, 0, 2, byte(1+i%sources))}
		d := net.Dialer{LocalAddr: src, Timeout: 10 * time.Second}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			dialFailed.Add(1)
			return
		}
		defer c.Close()
		opened.Add(1)
		start := time.Now()
		if _, err := c.Write(first); err != nil {
			closedByServer.Add(1)
			return
		}
		gone := make(chan struct{})
		if drip {
			go func() {
				for {
					select {
					case <-gone:
						return
					case <-time.After(500 * time.Millisecond):
					}
					if _, err := c.Write([]byte("X-Drip: a\r\n")); err != nil {
						return
					}
				}
			}()
		}
		defer close(gone)
		_ = c.SetReadDeadline(time.Now().Add(closeWithin))
		b, err := io.ReadAll(bufio.NewReader(c))
		switch {
		case err != nil && isTimeoutErr(err):
			notClosed.Add(1)
			return
		case time.Since(start) < timeout-500*time.Millisecond && !bytes.HasPrefix(b, []byte("HTTP/1.1 401")):
			closedEarly.Add(1)
		}
		closedByServer.Add(1)
		if bytes.HasPrefix(b, []byte("HTTP/1.1 408")) {
			answered408.Add(1)
		}
	}
	bodyHead := []byte("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 8388608\r\n\r\n{")
	lorisHead := []byte("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
	var wg sync.WaitGroup
	attackStart := time.Now()
	for i := range bodyConns + lorisConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				attack(i, bodyHead, false)
			} else {
				attack(i, lorisHead, true)
			}
		}()
	}
	// The legitimate client, during the attack.
	var legitOK, legitFailed int
	var legitErr error
	pace := time.NewTicker(20 * time.Millisecond) // at most 50 requests a second
	defer pace.Stop()
	for ; time.Since(attackStart) < timeout+time.Second; <-pace.C {
		if err := legit(); err != nil {
			legitFailed++
			legitErr = err
		} else {
			legitOK++
		}
	}
	wg.Wait()
	close(stopSampling)
	<-sampled
	t.Logf("RSS %d MiB before, peak %d MiB during the attack; %d attack connections opened (%d dials failed), "+
		"%d closed by the server (%d with a 408), %d closed before the timeout, %d still open after %v; legitimate requests: %d ok, %d failed (%v)",
		base>>20, peak.Load()>>20, opened.Load(), dialFailed.Load(), closedByServer.Load(), answered408.Load(),
		closedEarly.Load(), notClosed.Load(), closeWithin, legitOK, legitFailed, legitErr)
	if peak.Load() >= maxRSS {
		t.Errorf("peak RSS %d MiB, over %d MiB", peak.Load()>>20, maxRSS>>20)
	}
	if opened.Load() < (bodyConns+lorisConns)*9/10 {
		t.Errorf("only %d of %d attack connections opened", opened.Load(), bodyConns+lorisConns)
	}
	if notClosed.Load() != 0 {
		t.Errorf("%d attack connections were not closed by the timeouts", notClosed.Load())
	}
	if closedEarly.Load() != 0 {
		t.Errorf("%d attack connections closed before the timeout (refused by a cap, not timed out)", closedEarly.Load())
	}
	if legitFailed != 0 || legitOK == 0 {
		t.Errorf("legitimate requests during the attack: %d ok, %d failed: %v", legitOK, legitFailed, legitErr)
	}
	// Served again after the attack, and the memory is bounded afterwards too.
	if err := legit(); err != nil {
		t.Errorf("after the attack: %v", err)
	}
}

func isTimeoutErr(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
