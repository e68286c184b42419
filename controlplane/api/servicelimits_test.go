package api_test

import (
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/api"
	"github.com/sekgate/gateway/shared/internalapi"
)

// TestServiceLimits: forwarded customer paths are limited per key and per account: reads
// past the burst, top-ups past a few a minute and checkout sessions past the hourly cap
// are answered 429 with Retry-After and never reach the handler; another account is not
// affected.
func TestServiceLimits(t *testing.T) {
	t.Parallel()
	var topups atomic.Int64
	var skew atomic.Int64 // the API's clock runs this far ahead
	e := newEnvWith(t, func(c *api.Config) {
		c.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
		c.Topup = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			topups.Add(1)
			if r.URL.Query().Get("bad") != "" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest) // refused as invalid: does not count
				io.WriteString(w, `{"error":{"type":"invalid_request_error","message":"bad amount"}}`)
				return
			}
			w.WriteHeader(http.StatusCreated)
		})
		c.ServiceLimits = api.ServiceLimits{ReadsPerSecond: 0.01, ReadBurst: 5, TopupsPerMinute: 3, CheckoutsPerHour: 4}
	})
	a, b := e.createAccount("Acme", "se"), e.createAccount("Beta", "se")
	call := func(method, path, acct, key string) resp {
		t.Helper()
		h := map[string]string{internalapi.HeaderNodeID: "node-1", internalapi.HeaderAccountID: acct}
		if key != "" {
			h[internalapi.HeaderKeyID] = key
		}
		return e.do(method, path, nodeToken, nil, h)
	}
	refused := func(r resp) {
		t.Helper()
		if r.status != http.StatusTooManyRequests {
			t.Fatalf("status %d, want 429: %s", r.status, r.body)
		}
		if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 {
			t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
		}
	}
	// Reads: a key's burst of 5, then 429.
	for i := range 5 {
		if r := call("GET", "/v1/service/account", a, "key_000000000001"); r.status != 200 {
			t.Fatalf("read %d: %d %s", i, r.status, r.body)
		}
	}
	refused(call("GET", "/v1/service/requests", a, "key_000000000001"))
	// The account's own burst (twice the key's) still has room for another key, then ends.
	for range 5 {
		e.mustStatus(call("GET", "/v1/service/account", a, "key_000000000002"), 200)
	}
	refused(call("GET", "/v1/service/account", a, "key_000000000003"))
	e.mustStatus(call("GET", "/v1/service/account", b, "key_000000000009"), 200)

	// Top-ups: invalid ones do not count; 3 a minute per account, whatever the key.
	for range 10 {
		e.mustStatus(call("POST", "/v1/service/topup?bad=1", b, "key_000000000005"), 400)
	}
	topups.Store(0)
	for i := range 3 {
		if r := call("POST", "/v1/service/topup", b, "key_00000000000"+strconv.Itoa(i)); r.status != 201 {
			t.Fatalf("top-up %d: %d %s", i, r.status, r.body)
		}
	}
	refused(call("POST", "/v1/service/topup", b, "key_000000000007"))
	if n := topups.Load(); n != 3 {
		t.Fatalf("%d top-ups reached the handler, want 3", n)
	}
	// Checkout sessions per hour: a minute later the minute's limit has room again, the
	// hourly cap of 4 has room for one more only.
	for range 3 {
		e.mustStatus(call("POST", "/v1/service/topup", a, ""), 201)
	}
	refused(call("POST", "/v1/service/topup", a, ""))
	skew.Store(int64(time.Minute + time.Second))
	e.mustStatus(call("POST", "/v1/service/topup", a, ""), 201)
	r := call("POST", "/v1/service/topup", a, "")
	refused(r)
	if ra, _ := strconv.Atoi(r.header.Get("Retry-After")); ra < 10*60 {
		t.Errorf("the hourly cap's Retry-After is %d s, want the wait for the next session (~14 min)", ra)
	}
	if n := topups.Load(); n != 7 {
		t.Fatalf("%d top-ups reached the handler, want 7", n)
	}
}
