package routing

import (
	"testing"
	"time"
)

func TestSentTable(t *testing.T) {
	var m sentTable
	const key, other = 42, 42 + sentSlots // same slot
	a, b := tagOf(0xa0), tagOf(0xb0)
	m.mark(key, a, t0)
	for _, tc := range []struct {
		name string
		key  uint64
		tag  uint32
		at   int64
		want bool
	}{
		{"sent there", key, a, t0 + int64(time.Minute), true},
		{"not sent there", key, b, t0, false},
		{"too long ago", key, a, t0 + int64(6*time.Minute), false},
		{"another key", 7, a, t0, false},
	} {
		if got := m.sentWithin(tc.key, tc.tag, tc.at, 5*time.Minute); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	// A key sent to more replicas than it has ways forgets the least recently used one.
	for i := range sentWays {
		m.mark(key, tagOf(uint64(i+1)<<8), t0+int64(i+1))
	}
	if m.sentWithin(key, a, t0+10, time.Minute) {
		t.Error("oldest replica kept past the ways")
	}
	if !m.sentWithin(key, tagOf(4<<8), t0+10, time.Minute) {
		t.Error("newest replica forgotten")
	}
	// A colliding key takes the slot over.
	m.mark(other, a, t0)
	if m.sentWithin(key, tagOf(4<<8), t0+10, time.Minute) || !m.sentWithin(other, a, t0, time.Minute) {
		t.Error("slot not taken over by the colliding key")
	}
}
