package server

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

// goMemory is the memory the Go runtime holds from the system and has not returned to it
// (runtime/metrics: all its classes less released heap): the process's resident memory
// as far as the node's own allocations go, without what the race detector adds beside it.
func goMemory() int64 {
	m := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(m)
	return int64(m[0].Value.Uint64()) - int64(m[1].Value.Uint64())
}

// TestEndlessUpstreamBodiesBounded: 16 non-streaming answers that never end, at once, are
// cut at the buffered body limits (502, connection closed, the upstream sees it) while the
// node's memory (goMemory) grows by less than 128 MiB; the memory returns afterwards.
func TestEndlessUpstreamBodiesBounded(t *testing.T) {
	const n = 16
	var ended sync.WaitGroup
	var written atomic.Int64
	chunk := []byte(strings.Repeat(`{"x":"0123456789abcdef0123456789abcdef"},`, 1600)) // ~64 KiB
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer ended.Done()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		fl := w.(http.Flusher)
		for range 1 << 20 { // 64 GiB: endless for this test
			if _, err := w.Write(chunk); err != nil {
				return
			}
			written.Add(int64(len(chunk)))
			fl.Flush()
		}
	}))
	defer up.Close()
	g := startSimGateway(t, []snapshot.Route{chatRoute("a", "p", up.URL+"/v1", "SE", 0, 1)}, func(c *Config) {
		c.Health = routing.NewHealth(routing.HealthConfig{ConsecutiveFailures: 1000})
	})

	runtime.GC()
	debug.FreeOSMemory()
	base := goMemory()
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if r := goMemory(); r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	ended.Add(n)
	var wg sync.WaitGroup
	statuses := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = g.post(t, g.Keys.SE, chatPlainReq).Status
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	ended.Wait() // every upstream saw its connection closed
	for i, s := range statuses {
		if s != 502 {
			t.Errorf("request %d: status %d, want 502", i, s)
		}
	}
	grew := peak.Load() - base
	t.Logf("upstreams wrote %d MiB; peak Go memory %d MiB above %d MiB", written.Load()>>20, grew>>20, base>>20)
	if grew >= 128<<20 {
		t.Errorf("memory grew by %d MiB, want under 128", grew>>20)
	}
	recs := awaitRecords(t, g.Meter, n)
	for _, r := range recs {
		if r.Result == usage.ResultOK {
			t.Errorf("record %s: %s", r.RequestID, r.Result)
		}
	}
	// The memory returns: the heap comes back near where it was.
	runtime.GC()
	runtime.GC()
	debug.FreeOSMemory()
	if after := goMemory(); after-base >= 64<<20 {
		t.Errorf("memory still %d MiB above the start after the answers", (after-base)>>20)
	}
}
