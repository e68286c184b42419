package alerts

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sekgate/gateway/controlplane/store"
)

// Headers of a webhook delivery.
const (
	// HeaderSignature is "t=<unix seconds>,v1=<hex HMAC-SHA256>" (see Sign).
	HeaderSignature = "X-Gateway-Signature"
	HeaderEvent     = "X-Gateway-Event"    // firing or resolved
	HeaderDelivery  = "X-Gateway-Delivery" // the delivery's ID, the same on every retry
)

// Sign returns the HeaderSignature value for body sent at t with the rule's secret: the
// hex HMAC-SHA256, keyed with the secret as given (whsec_…), of the decimal Unix time,
// a ".", and the body exactly as sent.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + mac(secret, ts, body)
}

func mac(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Errors of Verify.
var (
	ErrBadSignature = errors.New("alert signature does not match")
	ErrStale        = errors.New("alert signature too old")
)

// Verify checks a HeaderSignature value against body as a receiver should: the signature
// must match, and its time must be within tolerance of now (which refuses replays).
func Verify(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts, sig string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || sig == "" {
		return ErrBadSignature
	}
	if !hmac.Equal([]byte(sig), []byte(mac(secret, ts, body))) {
		return ErrBadSignature
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return ErrStale
	}
	return nil
}

// Deliver sends every due delivery once, up to claimBatch at a time in parallel: a 2xx
// answer delivers it; anything else is tried again after the backoff, until MaxAttempts.
func (e *Evaluator) Deliver(ctx context.Context) error {
	for {
		ds, err := e.cfg.Store.ClaimAlertDeliveries(ctx, e.cfg.HTTPClient.Timeout+time.Minute, claimBatch)
		if err != nil || len(ds) == 0 {
			return err
		}
		errs := make([]error, len(ds))
		var wg sync.WaitGroup
		for i, d := range ds {
			wg.Go(func() { errs[i] = e.send(ctx, d) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil || len(ds) < claimBatch {
			return err
		}
	}
}

// claimBatch is how many due deliveries Deliver claims and sends at once.
const claimBatch = 20

// send makes one attempt of d and records it.
func (e *Evaluator) send(ctx context.Context, d store.AlertDelivery) error {
	status, reason := e.post(ctx, d)
	ok := status >= 200 && status < 300
	var next *time.Time
	attempt := d.Attempts + 1
	if !ok && attempt < e.cfg.MaxAttempts {
		t := e.cfg.Now().Add(e.backoff(attempt))
		next = &t
	}
	if !ok {
		e.log.Warn("alert webhook failed", "delivery", d.ID, "rule", d.RuleID, "attempt", attempt, "status", status, "reason", reason, "retry", next != nil)
	}
	return e.cfg.Store.FinishAlertDelivery(ctx, d.ID, ok, status, reason, next)
}

// backoff is the wait after the attempt-th failed attempt.
func (e *Evaluator) backoff(attempt int) time.Duration {
	d := e.cfg.RetryBase
	for i := 1; i < attempt && d < e.cfg.RetryMax; i++ {
		d *= 2
	}
	return min(d, e.cfg.RetryMax)
}

// post sends d's payload and returns the answer's status (0: none) and, on failure, why.
func (e *Evaluator) post(ctx context.Context, d store.AlertDelivery) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.WebhookURL, bytes.NewReader(d.Payload))
	if err != nil {
		return 0, fmt.Sprintf("build request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "sekgate-alerts/1")
	req.Header.Set(HeaderSignature, Sign(d.Secret, e.cfg.Now(), d.Payload))
	req.Header.Set(HeaderEvent, d.Event)
	req.Header.Set(HeaderDelivery, strconv.FormatInt(d.ID, 10))
	resp, err := e.cfg.HTTPClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, "answered " + resp.Status
	}
	return resp.StatusCode, ""
}
