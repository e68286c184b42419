package meter

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/shared/internalapi"
)

// TestSpoolAgeReported: every usage post carries the age of the spool's oldest unconfirmed
// record as of that attempt, so the control plane learns how long records waited while it
// was away.
func TestSpoolAgeReported(t *testing.T) {
	cp := newFakeCP(t)
	cp.down.Store(true)
	m := newMeter(t, testConfig(t, cp.srv.URL, t.TempDir()))
	run(t, m)
	m.Record(mkRecord(1, "acct_a", 2))
	// The record waits 400 ms; the header must say at least 300 (the age in the header and in
	// Stats are taken at different moments, and from the spool's coarser clock).
	eventually(t, 5*time.Second, "records waiting 400ms", func() bool { return m.Stats().OldestUnconfirmedAge >= 400*time.Millisecond })
	cp.down.Store(false)
	eventually(t, 5*time.Second, "record delivered", func() bool { return cp.count() == 1 })
	cp.mu.Lock()
	ages := append([]string(nil), cp.spoolAges...)
	cp.mu.Unlock()
	if len(ages) == 0 {
		t.Fatal("no usage post applied")
	}
	d, ok := internalapi.ParseSpoolAge(ages[0])
	if !ok || d < 300*time.Millisecond || d > time.Minute {
		t.Fatalf("spool age on the delivering attempt = %q; want at least the 300ms the record waited", ages[0])
	}
}

func TestBalanceWatchStatesCountry(t *testing.T) {
	for _, country := range []string{"", "SE"} {
		cp := newFakeCP(t)
		cfg := testConfig(t, cp.srv.URL, t.TempDir())
		cfg.Country = country
		m := newMeter(t, cfg)
		stop := run(t, m)
		eventually(t, 10*time.Second, "a balance poll", func() bool {
			cp.mu.Lock()
			defer cp.mu.Unlock()
			return len(cp.watchQueries) > 0
		})
		stop()
		cp.mu.Lock()
		q, _ := url.ParseQuery(cp.watchQueries[0])
		cp.mu.Unlock()
		if got := q.Get("country"); got != country || q.Has("country") != (country != "") {
			t.Errorf("node in %q polled balances with %v", country, q)
		}
	}
	cfg := testConfig(t, "http://127.0.0.1:1", t.TempDir())
	cfg.Country = "se"
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "Country") {
		t.Errorf("lower-case country accepted: %v", err)
	}
}
