package proc

import (
	"context"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestKillRestartStop(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(Spec{Name: "sleeper", Bin: sleep, Args: []string{"60"}, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	first := p.PID()
	if p.Exited() {
		t.Fatal("exited at once")
	}
	if err := p.Restart(); err == nil {
		t.Fatal("restart of a running process accepted")
	}
	p.Kill()
	if !p.Exited() || p.Err() == nil || !strings.Contains(p.Err().Error(), "killed") {
		t.Fatalf("after kill: exited %v err %v", p.Exited(), p.Err())
	}
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	if p.Exited() || p.PID() == first {
		t.Fatalf("restart: exited %v pid %d (was %d)", p.Exited(), p.PID(), first)
	}
	p.Stop(5 * time.Second)
	if !p.Exited() {
		t.Fatal("still running after Stop")
	}
	// WaitHTTP notices the exit instead of waiting out its timeout.
	addr, _ := FreeAddr()
	p.Addr = addr
	start := time.Now()
	if err := WaitHTTP(context.Background(), http.DefaultClient, p, "GET", "/", "", 200, time.Minute); err == nil || time.Since(start) > 10*time.Second {
		t.Fatalf("WaitHTTP on an exited process: %v after %v", err, time.Since(start))
	}
}
