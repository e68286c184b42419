package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestIngestGate: a batch enters at once while a slot is free (or without a bound), waits
// while the slots are held until one is given back, and gives up with its context's error
// when that ends first, leaving the slots as they were.
func TestIngestGate(t *testing.T) {
	const tick = 5 * time.Millisecond
	tests := []struct {
		name     string
		limit    int
		held     int  // slots taken before the batch comes
		cancel   bool // the batch's context ends while it waits
		release  bool // a holder gives its slot back while the batch waits
		wantErr  error
		wantWait time.Duration
	}{
		{name: "no bound", limit: -1, held: 5},
		{name: "free slot", limit: 1},
		{name: "one of two free", limit: 2, held: 1},
		{name: "waits for a slot", limit: 1, held: 1, release: true, wantWait: tick},
		{name: "waits for one of two", limit: 2, held: 2, release: true, wantWait: tick},
		{name: "gives up", limit: 1, held: 1, cancel: true, wantErr: context.Canceled, wantWait: tick},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The clock is read once when the batch starts to wait and once when it stops;
			// the first read is the moment to release a slot or end the context.
			waiting := make(chan struct{})
			var reads int
			t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
			now := func() time.Time {
				reads++
				if reads == 1 {
					close(waiting)
				}
				return t0.Add(time.Duration(reads-1) * tick)
			}
			g := newIngestGate(tc.limit, now)
			var leaves []func()
			for i := 0; i < tc.held; i++ {
				_, leave, err := g.enter(context.Background())
				if err != nil {
					t.Fatalf("holder %d: %v", i, err)
				}
				leaves = append(leaves, leave)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				select {
				case <-waiting:
				case <-ctx.Done(): // the batch did not wait
					return
				}
				switch {
				case tc.release:
					leaves[0]()
				case tc.cancel:
					cancel()
				}
			}()
			wait, leave, err := g.enter(ctx)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if wait != tc.wantWait {
				t.Errorf("waited %v, want %v", wait, tc.wantWait)
			}
			if err != nil {
				if leave != nil {
					t.Error("a batch that gave up got a slot to give back")
				}
				// It took no slot: once a holder leaves, the next batch enters at once.
				leaves[0]()
				if _, leave, err = g.enter(context.Background()); err != nil {
					t.Fatalf("after the holder left: %v", err)
				}
			}
			leave()
			if g.slots != nil && len(g.slots) != tc.held-boolInt(tc.release || tc.cancel) {
				t.Errorf("%d slots held after the batch left, want %d", len(g.slots), tc.held-boolInt(tc.release || tc.cancel))
			}
		})
	}
}

// TestIngestGateBound: many batches at once never run more than the bound together.
func TestIngestGateBound(t *testing.T) {
	for _, limit := range []int{1, 2, 3} {
		g := newIngestGate(limit, time.Now)
		var in, most atomic.Int32
		var wg sync.WaitGroup
		for i := 0; i < 50; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, leave, err := g.enter(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				n := in.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				in.Add(-1)
				leave()
			}()
		}
		wg.Wait()
		if m := most.Load(); m > int32(limit) || m < 1 {
			t.Errorf("limit %d: %d batches ran at once", limit, m)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
