package meter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/oklog/ulid/v2"
	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/jsonenc"
	"github.com/sekgate/gateway/shared/usage"
)

const maxReplyBytes = 8 << 20

// batch is a group of spooled records on its way to the control plane.
type batch struct {
	id    string
	body  []byte            // the usage.Batch JSON, records spliced in as spooled
	n     int               // records
	spans []span            // where in the spool they came from
	spend map[string]int64  // price per account
	names map[string]string // the accounts' names as spend holds them (addSpend)
}

// Run sends spooled records to the control plane and watches balances until ctx ends.
// It returns nil when ctx ends, ErrRunning when another Run is active and ErrClosed after
// Close.
func (m *Meter) Run(ctx context.Context) error {
	if m.closed.Load() {
		return ErrClosed
	}
	if !m.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer m.running.Store(false)
	var wg sync.WaitGroup
	wg.Go(func() { m.sendLoop(ctx) })
	wg.Go(func() { m.watchBalances(ctx) })
	wg.Wait()
	return nil
}

func (m *Meter) sendLoop(ctx context.Context) {
	for ctx.Err() == nil {
		if m.inflight == nil {
			b, err := m.nextBatch(ctx)
			if err != nil {
				if ctx.Err() == nil {
					m.setErr(err)
					m.log.Error("meter: read spool", "err", err)
					sleepCtx(ctx, m.cfg.Link.RetryWaitMax())
				}
				continue
			}
			m.inflight = b
		}
		sent := m.cfg.Now()
		reply, err := m.send(ctx, m.inflight)
		if ref, ok := asRefused(err); ok {
			b := m.inflight
			if derr := m.deadLetter(b, ref); derr != nil {
				// The records stay in the spool; the batch is tried again after a pause.
				m.setErr(derr)
				m.log.Error("meter: dead-letter write failed; retrying the batch", "batch_id", b.id, "err", derr)
				sleepCtx(ctx, m.cfg.Link.RetryWaitMax())
				continue
			}
			m.inflight = nil
			m.bal.confirm(b.spend, nil, nil, 0) // never debited: released once the next balance arrives
			m.spool.confirm(b.spans)
			continue
		}
		if err != nil {
			if ctx.Err() == nil { // every attempt is retried inside send; this is a safety net
				m.setErr(err)
				sleepCtx(ctx, m.cfg.Link.RetryWaitMax())
			}
			continue
		}
		b := m.inflight
		m.inflight = nil
		m.batches.Add(1)
		if m.cfg.OnBatch != nil {
			m.cfg.OnBatch(b.n, m.cfg.Now().Sub(sent))
		}
		m.bal.confirm(b.spend, reply.Balances, reply.Spent, reply.BalanceSeq)
		m.spool.confirm(b.spans)
		if reply.Rejected > 0 {
			m.log.Warn("meter: the control plane refused records of a batch (see gatewayctl nodes rejected)",
				"batch_id", b.id, "records", b.n, "rejected", reply.Rejected)
		}
		if reply.Inserted+reply.Duplicates+reply.Rejected != b.n {
			m.log.Warn("meter: reply counts differ from batch size", "batch_id", b.id, "records", b.n,
				"inserted", reply.Inserted, "duplicates", reply.Duplicates, "rejected", reply.Rejected)
		}
		if m.log.Enabled(ctx, slog.LevelDebug) {
			m.log.Debug("meter: batch confirmed", "batch_id", b.id, "records", b.n,
				"inserted", reply.Inserted, "duplicates", reply.Duplicates)
		}
	}
}

// nextBatch waits until BatchSize durable records are unsent, or until BatchInterval has
// passed since unsent records were first seen, and reads them into a batch.
func (m *Meter) nextBatch(ctx context.Context) (*batch, error) {
	var timer *time.Timer
	var timerC <-chan time.Time
	due := false
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		n := m.spool.unreadCount()
		if n >= m.cfg.BatchSize || (n > 0 && (due || m.cfg.BatchInterval == 0)) {
			return m.readBatch()
		}
		if n > 0 && timer == nil {
			timer = time.NewTimer(m.cfg.BatchInterval)
			timerC = timer.C
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-m.spool.avail:
		case <-timerC:
			due = true
		}
	}
}

func (m *Meter) readBatch() (*batch, error) {
	b := &batch{id: ulid.Make().String(), spend: make(map[string]int64)}
	body := make([]byte, 0, max(64<<10, m.lastBody+m.lastBody/8))
	body = append(body, `{"node_id":`...)
	body = jsonenc.AppendString(body, m.cfg.Link.NodeID())
	body = append(body, `,"batch_id":"`...)
	body = append(body, b.id...)
	body = append(body, `","records":[`...)
	spans, err := m.spool.readUnsent(m.cfg.BatchSize, func(p []byte) {
		if b.n > 0 {
			body = append(body, ',')
		}
		body = append(body, p...)
		b.n++
		b.addSpend(p)
	})
	b.spans = spans
	body = append(body, "]}"...)
	b.body = body
	m.lastBody = len(body)
	if err != nil && b.n == 0 {
		return nil, err
	}
	if err != nil {
		m.log.Error("meter: read spool; sending what was read", "err", err)
	}
	return b, nil
}

// addSpend adds record p's price to its account's spend in b, and to its key's. p is read in place, not
// copied. The spool reuses its buffer, so an account's name is copied when it first
// appears, and spend is only ever assigned under that copy (an assignment stores the key
// it is given, even to an existing entry).
func (b *batch) addSpend(p []byte) {
	rec := unsafe.String(unsafe.SliceData(p), len(p))
	r := gjson.GetMany(rec, "account_id", "price_micro_sek", "key_id")
	price := r[1].Int()
	b.spend[b.name(r[0].String())] += price
	if key := r[2].String(); key != "" {
		b.spend[b.name(key)] += price
	}
}

// name returns the batch's copy of an account's or key's name read from a spooled record.
func (b *batch) name(id string) string {
	name, ok := b.names[id]
	if !ok {
		if b.names == nil {
			b.names = make(map[string]string)
		}
		name = strings.Clone(id)
		b.names[name] = name
	}
	return name
}

// send POSTs a batch until the control plane confirms it or ctx ends.
func (m *Meter) send(ctx context.Context, b *batch) (*usage.Reply, error) {
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodPost, m.usageURL, b.body)
	if err != nil {
		return nil, fmt.Errorf("build usage request: %w", err)
	}
	m.authorize(req.Header)
	req.Header.Set("Content-Type", "application/json")
	var reply usage.Reply
	var refused *refusedError
	req.SetResponseHandler(func(resp *http.Response) error {
		defer resp.Body.Close()
		if permanentRefusal(resp.StatusCode) {
			refused = &refusedError{status: resp.StatusCode, reason: peekError(resp)}
			return nil
		}
		reply = usage.Reply{}
		if err := json.NewDecoder(io.LimitReader(resp.Body, maxReplyBytes)).Decode(&reply); err != nil {
			return fmt.Errorf("decode usage reply for batch %s: %w", b.id, err)
		}
		if reply.BatchID != b.id {
			return fmt.Errorf("usage reply confirms batch %q, sent %q", reply.BatchID, b.id)
		}
		return nil
	})
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("send batch %s: %w", b.id, err)
	}
	resp.Body.Close()
	if refused != nil {
		return nil, refused
	}
	return &reply, nil
}

// watchBalances long-polls the control plane for balance changes until ctx ends.
func (m *Meter) watchBalances(ctx context.Context) {
	wait := int64(m.cfg.BalanceWait / time.Second)
	for ctx.Err() == nil {
		since := m.bal.cursor.Load()
		url := m.balancesURL + "?since=" + strconv.FormatInt(since, 10) + "&wait=" + strconv.FormatInt(wait, 10)
		if m.cfg.Country != "" {
			url += "&country=" + m.cfg.Country // validated: two upper-case letters
		}
		req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			m.setErr(err)
			return
		}
		m.authorize(req.Header)
		var upd usage.BalanceUpdate
		changed := true
		req.SetResponseHandler(func(resp *http.Response) error {
			defer resp.Body.Close()
			upd = usage.BalanceUpdate{}
			if resp.StatusCode == http.StatusNotModified || resp.StatusCode == http.StatusNoContent {
				changed = false
				return nil
			}
			if err := json.NewDecoder(io.LimitReader(resp.Body, maxReplyBytes)).Decode(&upd); err != nil {
				return fmt.Errorf("decode balance update: %w", err)
			}
			return nil
		})
		start := time.Now()
		resp, err := m.client.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				m.setErr(fmt.Errorf("balance watch: %w", err))
				sleepCtx(ctx, m.cfg.Link.RetryWaitMax())
			}
			continue
		}
		resp.Body.Close()
		if changed {
			m.bal.apply(upd.Balances, upd.Spent, upd.Seq, true)
		}
		if !changed || len(upd.Balances) == 0 {
			// A control plane that answers at once with nothing new must not be polled in a
			// tight loop.
			if el := time.Since(start); el < m.minPoll {
				sleepCtx(ctx, m.minPoll-el)
			}
		}
	}
}

func (m *Meter) authorize(h http.Header) { m.cfg.Link.Authorize(h) }

// newClient builds the retrying client: every failure (transport error, any status but
// 200/204/304, an unreadable reply) is retried with the link's backoff (cplink.Backoff),
// without an attempt limit, until the request's context ends.
func (m *Meter) newClient() *retryablehttp.Client {
	link := m.cfg.Link
	c := retryablehttp.NewClient()
	c.HTTPClient = link.HTTPClient(HTTPTimeout)
	c.Logger = nil
	c.RetryMax = 1<<31 - 1 // effectively forever
	c.Backoff = func(_, _ time.Duration, attempt int, resp *http.Response) time.Duration {
		return link.Backoff(attempt, resp)
	}
	c.RequestLogHook = func(_ retryablehttp.Logger, req *http.Request, attempt int) {
		// Every attempt reports the spool's age as of that attempt.
		req.Header.Set(internalapi.HeaderSpoolAge, internalapi.FormatSpoolAge(m.Stats().OldestUnconfirmedAge))
		if attempt > 0 && req.Method == http.MethodPost {
			m.retries.Add(1)
		}
	}
	var lastLog time.Time
	var mu sync.Mutex
	c.CheckRetry = func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if err == nil {
			switch resp.StatusCode {
			case http.StatusOK, http.StatusNoContent, http.StatusNotModified:
				return false, nil
			}
			if req := resp.Request; req != nil && req.Method == http.MethodPost && permanentRefusal(resp.StatusCode) {
				return false, nil // the batch itself is refused: dead-lettered by the send loop
			}
			err = fmt.Errorf("%s %s: status %d%s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, peekError(resp))
		}
		m.setErr(err)
		mu.Lock()
		if now := time.Now(); now.Sub(lastLog) >= 10*time.Second {
			lastLog = now
			mu.Unlock()
			m.log.Warn("meter: control plane request failed; retrying", "err", err)
		} else {
			mu.Unlock()
		}
		return true, nil
	}
	return c
}

// peekError returns a short excerpt of an error response's body for logs.
func peekError(resp *http.Response) string {
	if resp.Body == nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return ""
	}
	return ": " + string(b)
}

// sleepCtx sleeps for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
