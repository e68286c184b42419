package loadstat

import (
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/snapshot"
)

type feedLog []int64

func (f *feedLog) Moved(_ uint64, delta int64) { *f = append(*f, delta) }

// TestFeedHeardAndTold: the feed is told of the node's starts and ends; other nodes'
// starts and ends heard since a server report move the view like the node's own, and a
// new report (which shows them) takes them back out.
func TestFeedHeardAndTold(t *testing.T) {
	g := NewRegistry()
	var told feedLog
	g.SetFeed(&told)
	rt := &index.Route{Route: snapshot.Route{ID: "replica-1", BaseURL: "http://x/v1"}}
	r := g.For(rt)
	at := int64(time.Hour)
	fresh := time.Hour
	r.SetServer(Report{Waiting: 1, Running: 4}, at, 0) // full at 4: capacity learned
	r.Start(at)
	r.Done()
	if len(told) != 2 || told[0] != 1 || told[1] != -1 {
		t.Fatalf("feed told %v, want [1 -1]", told)
	}
	id := xxhash.Sum64String("replica-1")
	for _, tc := range []struct {
		heard      []int64
		wantMoved  float64
		wantExcess float64
	}{
		{nil, 0, 1},
		{[]int64{1, 1}, 2, 3},
		{[]int64{-1, -1, -1}, -1, 0},
	} {
		for _, d := range tc.heard {
			g.Heard(id, d)
		}
		if v := r.View(at, fresh); v.Moved != tc.wantMoved || v.Excess != tc.wantExcess {
			t.Fatalf("after hearing %v: moved %v excess %v, want %v and %v", tc.heard, v.Moved, v.Excess, tc.wantMoved, tc.wantExcess)
		}
	}
	g.Heard(xxhash.Sum64String("unknown"), 5) // no such route: ignored
	r.SetServer(Report{Waiting: 0, Running: 3}, at+1, 0)
	if v := r.View(at+1, fresh); v.Moved != 0 || v.Excess != -1 {
		t.Fatalf("after a new report: %+v, want nothing moved and one slot free", v)
	}
	g.SetFeed(nil)
	r.Start(at)
	if len(told) != 2 {
		t.Fatalf("told after the feed was removed: %v", told)
	}
	g.Retain(func(string, string) bool { return false }) // plain routes stay
	g.Heard(id, 1)
	if v := r.View(at+1, fresh); v.Moved != 2 {
		t.Fatalf("a plain route stopped hearing after Retain: %+v", v)
	}
}
