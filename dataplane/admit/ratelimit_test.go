package admit

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/limits"
	"github.com/sekgate/gateway/shared/snapshot"
)

func TestAppendResetDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", -time.Second: "0s", time.Nanosecond: "1ms", 20 * time.Millisecond: "20ms", 999 * time.Millisecond: "999ms",
		time.Second: "1s", 1500 * time.Millisecond: "1.5s", 1234567 * time.Microsecond: "1.235s", 90 * time.Second: "1m30s",
		6 * time.Minute: "6m0s", time.Hour + 5*time.Second: "1h0m5s", 2*time.Hour + 3*time.Minute + 40*time.Millisecond: "2h3m0.04s",
	} {
		if got := string(appendResetDuration([]byte("x"), d)); got != "x"+want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
}

// The x-ratelimit-*-requests headers cost no allocation: the limiter's view is read in
// place and the values are formatted on the stack.
func TestRateHeadersAllocationFree(t *testing.T) {
	l := limits.New(limits.Config{})
	lim := &snapshot.Limits{RequestsPerSecond: 1000, Burst: 1000}
	var h fasthttp.ResponseHeader
	one := func() {
		tk, d := l.Acquire("k", nil, "a", lim, nil)
		if d.Reason != limits.OK {
			t.Fatal("refused")
		}
		if v, ok := tk.RateView(time.Now()); ok {
			setRateHeaders(&h, v)
		}
		tk.Release()
	}
	one()
	if n := testing.AllocsPerRun(200, one); n != 0 {
		t.Fatalf("%.1f allocations", n)
	}
	if len(h.Peek(headerResetRequests)) == 0 {
		t.Fatal("no reset header")
	}
}
