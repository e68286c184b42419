package benchingest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/usage"
)

// node is one simulated data-plane node: it builds batches of fresh records the way the
// meter does (records as usage.Record.AppendJSON writes them into the spool, wrapped in
// {"node_id","batch_id","records"}) and posts them with the node's token and ID, each as
// soon as the previous one was confirmed.
type node struct {
	id       string
	url      string
	token    string
	accounts []string
	rng      *rand.Rand
	client   *http.Client
	key      string
	body     []byte
}

// batch builds a batch of n records.
func (nd *node) batch(n int, now time.Time) (id string, body []byte) {
	id = ulid.Make().String()
	b := nd.body[:0]
	b = append(b, `{"node_id":"`...)
	b = append(b, nd.id...)
	b = append(b, `","batch_id":"`...)
	b = append(b, id...)
	b = append(b, `","records":[`...)
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		r := nd.record(now)
		b = r.AppendJSON(b)
	}
	b = append(b, "]}"...)
	nd.body = b
	return id, b
}

// record is a typical chat record: a few hundred prompt tokens, up to a thousand
// completion tokens, priced by the formula, one routing attempt, started within the last
// ten seconds (nanosecond times, as nodes write them: no two alike, which matters to the
// size of the time-ordered indexes).
func (nd *node) record(now time.Time) usage.Record {
	in, out := 50+nd.rng.Int64N(2000), 10+nd.rng.Int64N(1000)
	ts := now.Add(-time.Duration(nd.rng.Int64N(int64(10 * time.Second))))
	return usage.Record{RequestID: "req_" + ulid.Make().String(), TS: ts, AccountID: nd.accounts[nd.rng.IntN(len(nd.accounts))],
		KeyID: &nd.key, Model: Model, Endpoint: "/v1/chat/completions", Stream: nd.rng.IntN(2) == 0, Provider: "simulator",
		Residency: "se-local", Status: 200, Result: usage.ResultOK, PromptTokens: in, CompletionTokens: out,
		PriceMicroSEK: money.Price(in, out, InOrePerMTok, OutOrePerMTok), DurationMS: 100 + nd.rng.Int64N(5000),
		Routing: &usage.Routing{Policy: "se", NodeRegion: "se-sto", Attempts: []usage.Attempt{
			{Route: "bench-route", Provider: "simulator", Region: "se-local", Status: 200, DurationMS: 90}}}}
}

// post sends one batch and checks the reply confirms it with every record inserted.
func (nd *node) post(ctx context.Context, id string, body []byte, n int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, nd.url+internalapi.PathUsage, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+nd.token)
	req.Header.Set(internalapi.HeaderNodeID, nd.id)
	req.Header.Set("Content-Type", "application/json")
	resp, err := nd.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("batch %s: %s: %s", id, resp.Status, b)
	}
	var rep usage.Reply
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("batch %s: decode reply: %w", id, err)
	}
	if rep.BatchID != id || rep.Inserted != n {
		return fmt.Errorf("batch %s: reply confirms %q with %d of %d records inserted (%d duplicates, %d rejected)",
			id, rep.BatchID, rep.Inserted, n, rep.Duplicates, rep.Rejected)
	}
	return nil
}

// drive runs nodes simulated nodes, each posting batches of batchSize records back to
// back for d, and returns the batches' latencies and how many records were confirmed.
func drive(ctx context.Context, s *stack, nodes, batchSize int, d time.Duration, seed uint64) (lat []time.Duration, records int64, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	transport := &http.Transport{MaxIdleConnsPerHost: nodes, MaxConnsPerHost: nodes}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 2 * time.Minute}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		total    atomic.Int64
	)
	deadline := time.Now().Add(d)
	for i := 0; i < nodes; i++ {
		nd := &node{id: fmt.Sprintf("bench-node-%d", i), url: s.cp.URL(), token: s.nodeToken, accounts: s.accounts,
			rng: rand.New(rand.NewPCG(seed, uint64(i))), client: client, key: "key_0123456789ab"}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(deadline) && ctx.Err() == nil {
				id, body := nd.batch(batchSize, time.Now())
				start := time.Now()
				if err := nd.post(ctx, id, body, batchSize); err != nil {
					mu.Lock()
					if firstErr == nil && ctx.Err() == nil {
						firstErr = fmt.Errorf("%s: %w", nd.id, err)
					}
					mu.Unlock()
					cancel()
					return
				}
				mine = append(mine, time.Since(start))
				total.Add(int64(batchSize))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	slices.Sort(lat)
	return lat, total.Load(), firstErr
}

// percentile returns the p-th percentile (0 < p ≤ 100) of sorted durations, in ms.
func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return float64(sorted[i]) / float64(time.Millisecond)
}
