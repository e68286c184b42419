package routing

import (
	"testing"
	"time"
)

// TestPlacementsShared: a node reports only the placements it made after a time, learns
// the fleet's (warm ones, never over a newer one of its own), and never reports a learned
// one back.
func TestPlacementsShared(t *testing.T) {
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC).UnixNano()
	var a, b Selector
	a.sent.mark(1, 11, now-int64(2*time.Second))
	a.sent.mark(2, 12, now)
	got := a.Placements(now-int64(time.Second), 100)
	if len(got) != 1 || got[0].Key != 2 || got[0].Tag != 12 {
		t.Fatalf("placements after a second ago: %+v", got)
	}
	if all := a.Placements(0, 100); len(all) != 2 {
		t.Fatalf("all placements: %+v", all)
	}
	if one := a.Placements(0, 1); len(one) != 1 {
		t.Fatalf("limit 1: %+v", one)
	}

	b.sent.mark(2, 12, now)
	b.Learn([]Placement{
		{Key: 1, Tag: 11, At: now - int64(2*time.Second)},
		{Key: 2, Tag: 12, At: now - int64(time.Second)},    // older than b's own
		{Key: 3, Tag: 13, At: now - int64(10*time.Minute)}, // cold
	}, now)
	if !b.sent.sentWithin(1, 11, now, b.warmFor()) {
		t.Fatal("learned placement not warm")
	}
	if b.sent.sentWithin(3, 13, now, b.warmFor()) {
		t.Fatal("a cold placement was learned")
	}
	own := b.Placements(0, 100)
	if len(own) != 1 || own[0].Key != 2 || own[0].At != now {
		t.Fatalf("b reports %+v, want only its own placement of key 2 at its own time", own)
	}
}
