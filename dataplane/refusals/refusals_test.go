package refusals

import (
	"testing"
	"time"

	"github.com/sekgate/gateway/shared/internalapi"
)

func TestCounter(t *testing.T) {
	now := time.Date(2026, 11, 27, 23, 59, 0, 0, time.UTC)
	c := New(func() time.Time { return now })
	c.Add("acct_a", "key_1", 402, "insufficient_quota")
	c.Add("acct_a", "key_1", 402, "insufficient_quota")
	c.Add("acct_a", "key_2", 429, "rate_limit_exceeded")
	c.Add("", "key_3", 402, "x")   // no account: not counted
	now = now.Add(2 * time.Minute) // the next UTC day
	c.Add("acct_a", "key_1", 402, "insufficient_quota")
	got := map[string]int64{}
	for _, e := range c.take() {
		got[e.Day+" "+e.KeyID+" "+e.Code] = e.Count
	}
	want := map[string]int64{"2026-11-27 key_1 insufficient_quota": 2, "2026-11-27 key_2 rate_limit_exceeded": 1, "2026-11-28 key_1 insufficient_quota": 1}
	if len(got) != len(want) {
		t.Fatalf("%v", got)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d, want %d", k, got[k], n)
		}
	}
	if len(c.take()) != 0 {
		t.Fatal("take did not empty the counter")
	}
	// A report that could not be sent comes back, and the counter stays bounded.
	c.putBack([]internalapi.RefusalCount{{Day: "2026-11-28", AccountID: "acct_a", KeyID: "key_1", Status: 402, Code: "insufficient_quota", Count: 5}})
	c.Add("acct_a", "key_1", 402, "insufficient_quota")
	if es := c.take(); len(es) != 1 || es[0].Count != 6 {
		t.Fatalf("after put back: %+v", es)
	}
	for i := range internalapi.MaxRefusalEntries + 10 {
		c.Add("acct_a", "key_1", 400+i%100, string(rune('a'+i%26))+time.Duration(i).String())
	}
	if n := len(c.take()); n != internalapi.MaxRefusalEntries {
		t.Fatalf("%d entries kept, want the bound %d", n, internalapi.MaxRefusalEntries)
	}
}
