// Package refusals counts, per account, key, status and error code, the requests a node
// refused after authenticating them and before routing them (no request record is made for
// those), and reports the counts to the control plane now and then.
package refusals

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/sekgate/gateway/dataplane/cplink"
	"github.com/sekgate/gateway/shared/internalapi"
)

type entryKey struct {
	day, account, key, code string
	status                  int
}

// Counter gathers refusals between reports. The zero value is not usable; use New.
type Counter struct {
	now func() time.Time

	mu sync.Mutex
	m  map[entryKey]int64
}

// New returns a Counter on the clock now (time.Now when nil).
func New(now func() time.Time) *Counter {
	if now == nil {
		now = time.Now
	}
	return &Counter{now: now, m: map[entryKey]int64{}}
}

// Add counts one refusal. Past MaxRefusalEntries distinct entries waiting, new ones are
// dropped (they are diagnostics).
func (c *Counter) Add(account, key string, status int, code string) {
	if c == nil || account == "" {
		return
	}
	k := entryKey{day: c.now().UTC().Format(time.DateOnly), account: account, key: key, code: code, status: status}
	c.mu.Lock()
	if _, ok := c.m[k]; ok || len(c.m) < internalapi.MaxRefusalEntries {
		c.m[k]++
	}
	c.mu.Unlock()
}

// take empties the counter and returns what it held.
func (c *Counter) take() []internalapi.RefusalCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]internalapi.RefusalCount, 0, len(c.m))
	for k, n := range c.m {
		out = append(out, internalapi.RefusalCount{Day: k.day, AccountID: k.account, KeyID: k.key, Status: k.status, Code: k.code, Count: n})
	}
	clear(c.m)
	return out
}

// putBack returns a report that could not be sent, within the bound.
func (c *Counter) putBack(es []internalapi.RefusalCount) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range es {
		k := entryKey{day: e.Day, account: e.AccountID, key: e.KeyID, code: e.Code, status: e.Status}
		if _, ok := c.m[k]; ok || len(c.m) < internalapi.MaxRefusalEntries {
			c.m[k] += e.Count
		}
	}
}

// Run sends what was counted every interval (and once more when ctx ends) until ctx ends.
func (c *Counter) Run(ctx context.Context, link *cplink.Client, interval time.Duration, log *slog.Logger) {
	client := link.HTTPClient(10 * time.Second)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			_ = c.send(flush, link, client)
			cancel()
			return
		case <-t.C:
			if err := c.send(ctx, link, client); err != nil {
				log.Debug("refusal counts not sent; kept for the next report", "err", err)
			}
		}
	}
}

func (c *Counter) send(ctx context.Context, link *cplink.Client, client *http.Client) error {
	es := c.take()
	if len(es) == 0 {
		return nil
	}
	body, err := json.Marshal(internalapi.RefusalReport{Entries: es})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, link.URL(internalapi.PathRefusals), bytes.NewReader(body))
	if err != nil {
		c.putBack(es)
		return err
	}
	link.Authorize(req.Header)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		c.putBack(es)
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	switch {
	case resp.StatusCode/100 == 2:
		return nil
	case resp.StatusCode/100 == 4: // refused as invalid: sending it again would not help
		return fmt.Errorf("control plane refused the refusal counts: %d", resp.StatusCode)
	}
	c.putBack(es)
	return fmt.Errorf("control plane answered %d", resp.StatusCode)
}
