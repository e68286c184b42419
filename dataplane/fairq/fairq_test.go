package fairq

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func (q *Queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.depth
}

func waitLen(t *testing.T, q *Queue, n int) {
	t.Helper()
	end := time.Now().Add(10 * time.Second)
	for q.len() != n {
		if time.Now().After(end) {
			t.Fatalf("queue length %d, want %d", q.len(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// Requests are let go in turns across accounts, by weight; a burst of one account does not
// hold back another's requests.
func TestTurns(t *testing.T) {
	for _, tc := range []struct {
		name    string
		weightA int
		want    string
	}{{"equal", 1, "ababaaaa"}, {"a weighs 2", 2, "aabaabaa"}} {
		t.Run(tc.name, func(t *testing.T) {
			q := New(Config{MaxWait: time.Minute})
			var open atomic.Bool
			ready := func() bool { return open.Load() }
			order := make(chan byte, 16)
			add := func(acct string, weight int) {
				n := q.len()
				go func() {
					if _, err := q.Wait(context.Background(), acct, weight, "standard", ready); err == nil {
						order <- acct[0]
					}
				}()
				waitLen(t, q, n+1)
			}
			for range 6 {
				add("a", tc.weightA)
			}
			add("b", 1)
			add("b", 1)
			open.Store(true)
			got := ""
			for range 8 {
				if !q.Kick() {
					t.Fatal("nothing let go")
				}
				got += string(<-order)
			}
			if got != tc.want {
				t.Fatalf("order %s, want %s", got, tc.want)
			}
			if q.Kick() || q.Busy() {
				t.Fatal("queue not empty")
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	q := New(Config{MaxWait: 30 * time.Millisecond, AccountDepth: 1})
	never := func() bool { return false }
	done := make(chan error)
	go func() {
		_, err := q.Wait(context.Background(), "a", 1, "standard", never)
		done <- err
	}()
	waitLen(t, q, 1)
	if _, err := q.Wait(context.Background(), "a", 1, "standard", never); !errors.Is(err, ErrFull) {
		t.Fatalf("second of a full account: %v", err)
	}
	if err := <-done; !errors.Is(err, ErrTimeout) {
		t.Fatalf("waited past MaxWait: %v", err)
	}
	if q.Busy() {
		t.Fatal("timed-out request still queued")
	}
}

// A request whose routes have room goes at once when nobody waits.
func TestNoWaitWhenReady(t *testing.T) {
	q := New(Config{})
	if _, err := q.Wait(context.Background(), "a", 1, "standard", func() bool { return true }); err != nil {
		t.Fatal(err)
	}
}
