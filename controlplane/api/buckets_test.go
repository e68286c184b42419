package api

import (
	"fmt"
	"testing"
	"time"
)

// TestBucketsBoundedWithoutReset: the table never holds more than its size; filling it with
// other keys evicts only the least recently used, so a key in use keeps its spent bucket;
// a refusal on the first key creates no entry for the second.
func TestBucketsBoundedWithoutReset(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	b := newBuckets(100, 1.0/60, 2)
	for range 2 {
		if ok, _ := b.allow(now, "addr:a", "name:root"); !ok {
			t.Fatal("refused within the burst")
		}
	}
	if ok, wait := b.allow(now, "addr:a", "name:root"); ok || wait < 59*time.Second {
		t.Fatalf("third at once: ok=%v wait %v", ok, wait)
	}
	// The refused address does not create the name's entry.
	if ok, _ := b.allow(now, "addr:a", "name:new"); ok || b.len() != 2 {
		t.Fatalf("refused by the address: ok=%v, %d entries", ok, b.len())
	}
	// 10,000 other keys, the spent key used every 50: it is never evicted, never reset.
	for i := range 10000 {
		b.allow(now, fmt.Sprintf("addr:%d", i))
		if i%50 == 0 {
			if ok, _ := b.allow(now, "name:root"); ok {
				t.Fatalf("after %d other keys the spent key was admitted", i)
			}
		}
		if b.len() > 100 {
			t.Fatalf("%d entries, max 100", b.len())
		}
	}
	if ok, _ := b.allow(now.Add(time.Minute), "name:root"); !ok {
		t.Fatal("a token did not come back after its time")
	}
}
