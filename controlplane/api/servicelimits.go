package api

import (
	"net/http"
	"time"

	"github.com/sekgate/gateway/controlplane/httpjson"
	"github.com/sekgate/gateway/internal/flagenv"
	"github.com/sekgate/gateway/shared/internalapi"
)

// ServiceLimits bound the customer paths nodes forward (/v1/service/*), per API key and per
// account (the identity the node authenticated); over a limit the answer is 429 with
// Retry-After. The tagged fields are flags of the controlplane command; zero or negative
// fields take their defaults.
type ServiceLimits struct {
	// ReadsPerSecond and ReadBurst bound the reads (account, request list, one request) of
	// one key; an account gets twice both across its keys (a client pages through 5,000
	// records at once). Each read is a database query.
	ReadsPerSecond float64 `flag:"service-reads-per-second" default:"10" help:"/v1/service/* reads per second per key (an account gets twice as many)"`
	ReadBurst      int     `flag:"service-read-burst" default:"50" help:"burst of /v1/service/* reads per key (an account gets twice as many)"`
	// TopupsPerMinute bounds top-ups per key and per account (also the burst). A top-up
	// refused as invalid (4xx) does not count.
	TopupsPerMinute int `flag:"service-topups-per-minute" default:"5" help:"top-ups per minute per key and per account (also the burst)"`
	// CheckoutsPerHour bounds the checkout sessions (top-ups) of one account per hour
	// (also the burst): each is a payment-provider call and a row.
	CheckoutsPerHour int `flag:"service-checkouts-per-hour" default:"30" help:"checkout sessions per account per hour (also the burst)"`
	// MaxKeys bounds the keys and accounts each limiter remembers; the least recently seen
	// makes room.
	MaxKeys int `default:"100000"`
}

func (l *ServiceLimits) fill() {
	l.ReadsPerSecond, l.ReadBurst = max(l.ReadsPerSecond, 0), max(l.ReadBurst, 0)
	l.TopupsPerMinute, l.CheckoutsPerHour, l.MaxKeys = max(l.TopupsPerMinute, 0), max(l.CheckoutsPerHour, 0), max(l.MaxKeys, 0)
	flagenv.MustDefaults(l)
}

// serviceLimiter holds the buckets of ServiceLimits.
type serviceLimiter struct {
	readKey, readAcct, topup, checkout *buckets
}

func newServiceLimiter(l ServiceLimits) *serviceLimiter {
	l.fill()
	return &serviceLimiter{
		readKey:  newBuckets(l.MaxKeys, l.ReadsPerSecond, l.ReadBurst),
		readAcct: newBuckets(l.MaxKeys, 2*l.ReadsPerSecond, 2*l.ReadBurst),
		topup:    newBuckets(l.MaxKeys, float64(l.TopupsPerMinute)/60, l.TopupsPerMinute),
		checkout: newBuckets(l.MaxKeys, float64(l.CheckoutsPerHour)/3600, l.CheckoutsPerHour),
	}
}

// Service path classes.
const (
	serviceRead = iota
	serviceTopup
)

// limited runs h within the limits of its class for the key and account the node named.
// A request without an account goes to h, which refuses it. A top-up the handler refuses
// (4xx: a bad amount, say) gives its tokens back: only checkout attempts count.
func (s *server) limited(class int, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		acct, key := r.Header.Get(internalapi.HeaderAccountID), r.Header.Get(internalapi.HeaderKeyID)
		if acct == "" {
			h(w, r)
			return
		}
		ok, wait, undo := s.service.admit(class, s.now(), acct, key)
		if !ok {
			ra := max(1, int((wait+time.Second-1)/time.Second))
			writeError(w, httpjson.ErrServiceRateLimited.WithRetryAfter(ra))
			return
		}
		if undo == nil {
			h(w, r)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		h(sw, r)
		if sw.status >= 400 && sw.status < 500 {
			undo(s.now())
		}
	}
}

// statusWriter notes the status of an answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// admit takes a request of class; undo (top-ups only) gives its tokens back.
func (l *serviceLimiter) admit(class int, now time.Time, acct, key string) (bool, time.Duration, func(time.Time)) {
	switch class {
	case serviceTopup:
		keys := []string{"a:" + acct}
		if key != "" {
			keys = append(keys, "k:"+key)
		}
		if ok, wait := l.topup.allow(now, keys...); !ok {
			return false, wait, nil
		}
		if ok, wait := l.checkout.allow(now, "a:"+acct); !ok {
			l.topup.giveBack(now, keys...)
			return false, wait, nil
		}
		return true, 0, func(at time.Time) {
			l.topup.giveBack(at, keys...)
			l.checkout.giveBack(at, "a:"+acct)
		}
	default:
		if key != "" {
			if ok, wait := l.readKey.allow(now, key); !ok {
				return false, wait, nil
			}
		}
		ok, wait := l.readAcct.allow(now, acct)
		return ok, wait, nil
	}
}
