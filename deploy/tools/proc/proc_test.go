package proc

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
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

func TestWaitURL(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t" {
			w.WriteHeader(401)
			return
		}
		if calls.Add(1) < 3 {
			w.WriteHeader(503)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	if err := WaitURL(ctx, srv.Client(), "GET", srv.URL, "Bearer t", 200, time.Minute, nil); err != nil || calls.Load() != 3 {
		t.Fatalf("wait: %v after %d calls", err, calls.Load())
	}
	err := WaitURL(ctx, srv.Client(), "GET", srv.URL, "", 200, 300*time.Millisecond, nil)
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("without the token: %v", err)
	}
	gone := errors.New("gone")
	if err := WaitURL(ctx, srv.Client(), "GET", srv.URL, "", 200, time.Minute, func() error { return gone }); !errors.Is(err, gone) {
		t.Fatalf("gone: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := WaitURL(cctx, srv.Client(), "GET", srv.URL, "", 200, time.Minute, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestGroup(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	g := Group{BinDir: filepath.Dir(sleep), LogDir: filepath.Join(t.TempDir(), "logs")}
	if err := g.Prepare(filepath.Base(sleep), "no-such-binary"); err == nil || !strings.Contains(err.Error(), "no-such-binary") {
		t.Fatalf("Prepare with a missing binary: %v", err)
	}
	if err := g.Prepare(filepath.Base(sleep)); err != nil {
		t.Fatal(err)
	}
	a, err := g.Start("a", filepath.Base(sleep), "", "60")
	if err != nil {
		t.Fatal(err)
	}
	b, err := g.Start("b", filepath.Base(sleep), "", "60")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Alive(); err != nil {
		t.Fatal(err)
	}
	a.Kill()
	if err := g.Alive(); err == nil || !strings.HasPrefix(err.Error(), "a exited") {
		t.Fatalf("after a kill: %v", err)
	}
	g.StopAll(5 * time.Second)
	if !b.Exited() {
		t.Fatal("b still running after StopAll")
	}
	if err := g.Alive(); err != nil {
		t.Fatalf("an emptied group: %v", err)
	}
	if _, err := g.Start("c", "no-such-binary", ""); err == nil {
		t.Fatal("a missing binary started")
	}
}
