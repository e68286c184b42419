package benchrun

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// sseClient is a minimal HTTP/1.1 client for one keep-alive connection that timestamps every
// server-sent event as it is read, so batching on the way shows up as events arriving
// together. It writes requests by hand and parses answers with http.ReadResponse.
type sseClient struct {
	addr string
	conn net.Conn
	br   *bufio.Reader
	lr   *bufio.Reader // line reader over the current body
}

// StreamStat is what one streamed request saw. Times are from just before the request was
// written.
type StreamStat struct {
	Status  int
	Headers time.Duration // status line and headers read
	First   time.Duration // first event read (time to first byte of the answer)
	Total   time.Duration
	Events  int
	Done    bool // [DONE] seen
	// At holds each event's arrival time when requested.
	At []time.Duration
}

func streamRequest(addr, auth string, body []byte) []byte {
	var b bytes.Buffer
	b.WriteString("POST /v1/chat/completions HTTP/1.1\r\nHost: " + addr +
		"\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nAuthorization: " + auth +
		"\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
	b.Write(body)
	return b.Bytes()
}

func (c *sseClient) close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// do sends req (from streamRequest) and reads the event stream to its end, or until the
// deadline. With keepTimes it records every event's arrival.
func (c *sseClient) do(req []byte, deadline time.Time, keepTimes bool) (StreamStat, error) {
	var st StreamStat
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
		if err != nil {
			return st, err
		}
		c.conn = conn
		if c.br == nil {
			c.br = bufio.NewReaderSize(nil, 4<<10)
		}
		c.br.Reset(conn)
	}
	_ = c.conn.SetDeadline(deadline)
	start := time.Now()
	if _, err := c.conn.Write(req); err != nil {
		c.close()
		return st, err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		c.close()
		return st, err
	}
	st.Status = resp.StatusCode
	st.Headers = time.Since(start)
	if c.lr == nil {
		c.lr = bufio.NewReaderSize(nil, 4<<10)
	}
	c.lr.Reset(resp.Body)
	inEvent := false
	for {
		line, err := c.lr.ReadSlice('\n')
		if len(line) > 0 {
			switch {
			case len(bytes.TrimRight(line, "\r\n")) == 0:
				inEvent = false
			case !inEvent && (bytes.HasPrefix(line, []byte("data:")) || bytes.HasPrefix(line, []byte("event:"))):
				inEvent = true
				at := time.Since(start)
				if st.Events == 0 {
					st.First = at
				}
				st.Events++
				if keepTimes {
					st.At = append(st.At, at)
				}
			}
			if bytes.HasPrefix(line, []byte("data: [DONE]")) {
				st.Done = true
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			st.Total = time.Since(start)
			resp.Body.Close()
			if err != io.EOF || resp.Close {
				c.close()
			}
			if err != io.EOF {
				return st, err
			}
			if resp.StatusCode != 200 {
				return st, fmt.Errorf("status %d", resp.StatusCode)
			}
			return st, nil
		}
	}
}

// StreamResult summarises a streaming run on one target.
type StreamResult struct {
	Target  string  `json:"target"`
	Mode    string  `json:"mode"` // "rate" (open loop) or "concurrency" (closed loop)
	Rate    int     `json:"rate,omitempty"`
	Conc    int     `json:"concurrency,omitempty"`
	Tokens  int     `json:"tokens_per_stream"`
	Secs    float64 `json:"duration_s"`
	Streams int     `json:"streams"`
	Failed  int     `json:"failed"`
	// Time to headers and to the first event, in ms.
	HeadersP50 float64 `json:"headers_p50_ms"`
	FirstP50   float64 `json:"ttfb_p50_ms"`
	FirstP90   float64 `json:"ttfb_p90_ms"`
	FirstP99   float64 `json:"ttfb_p99_ms"`
	TotalP50   float64 `json:"stream_p50_ms"`
	// Events relayed per second over the run.
	EventsPerSec float64 `json:"events_per_s"`
	// CPU seconds per 1,000 streams (target and simulator) and peak RSS of the target.
	CPUPer1k    float64  `json:"cpu_s_per_1k_streams"`
	SimCPUPer1k float64  `json:"sim_cpu_s_per_1k_streams"`
	PeakRSSMiB  float64  `json:"peak_rss_mib"`
	Errors      []string `json:"errors,omitempty"`
	// Added time to first byte over the direct path and over the bare proxy.
	AddedFirstP50Direct *float64 `json:"added_ttfb_p50_over_direct_ms,omitempty"`
	AddedFirstP50Bare   *float64 `json:"added_ttfb_p50_over_bare_ms,omitempty"`
	CPURatioBare        *float64 `json:"cpu_ratio_to_bare,omitempty"`
}

// streamSpec describes a streaming run: open loop at Rate streams per second, or closed loop
// with Conc clients, for Dur.
type streamSpec struct {
	Rate, Conc, Tokens int
	Dur                time.Duration
}

func streamBody(tokens int, tps float64) []byte {
	sim := `"sim":{"output_tokens":` + strconv.Itoa(tokens)
	if tps > 0 {
		sim += `,"tokens_per_second":` + strconv.FormatFloat(tps, 'f', -1, 64)
	}
	sim += `}`
	return []byte(`{"model":"` + Model + `","stream":true,"max_tokens":` + strconv.Itoa(tokens) +
		`,"messages":[{"role":"user","content":"hej hopp i lingonskogen"}],` + sim + `}`)
}

// runStreams drives streamed chat requests at t and measures time to first event and events
// per second. Every stream is bounded by a 30 s deadline and the run by spec.Dur plus that.
func runStreams(ctx context.Context, t *Target, spec streamSpec) (StreamResult, error) {
	res := StreamResult{Target: t.Name, Tokens: spec.Tokens, Secs: spec.Dur.Seconds()}
	req := streamRequest(hostOf(t.URL), t.Auth, streamBody(spec.Tokens, 0))
	workers := spec.Conc
	var tickets chan struct{}
	if spec.Rate > 0 {
		res.Mode, res.Rate = "rate", spec.Rate
		workers = 256
		n := int(float64(spec.Rate) * spec.Dur.Seconds())
		tickets = make(chan struct{}, n)
		go func() {
			defer close(tickets)
			start := time.Now()
			for i := 0; i < n; i++ {
				next := start.Add(time.Duration(float64(i) / float64(spec.Rate) * float64(time.Second)))
				if d := time.Until(next); d > 0 {
					select {
					case <-ctx.Done():
						return
					case <-time.After(d):
					}
				}
				tickets <- struct{}{}
			}
		}()
	} else {
		res.Mode, res.Conc = "concurrency", spec.Conc
	}
	tm, err := StartMeter(t.PID)
	if err != nil {
		return res, err
	}
	sm, err := StartMeter(t.SimPID)
	if err != nil {
		return res, err
	}
	var (
		mu     sync.Mutex
		stats  []StreamStat
		errs   = map[string]bool{}
		failed int
		wg     sync.WaitGroup
	)
	start := time.Now()
	end := start.Add(spec.Dur)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &sseClient{addr: hostOf(t.URL)}
			defer c.close()
			for ctx.Err() == nil {
				if tickets != nil {
					if _, ok := <-tickets; !ok {
						return
					}
				} else if time.Now().After(end) {
					return
				}
				st, err := c.do(req, time.Now().Add(30*time.Second), false)
				mu.Lock()
				if err != nil || !st.Done {
					failed++
					if err == nil {
						err = errors.New("stream ended without [DONE]")
					}
					if len(errs) < 5 {
						errs[err.Error()] = true
					}
				} else {
					stats = append(stats, st)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	time.Sleep(250 * time.Millisecond)
	tu, err := tm.Stop()
	if err != nil {
		return res, err
	}
	su, err := sm.Stop()
	if err != nil {
		return res, err
	}
	res.Streams, res.Failed = len(stats)+failed, failed
	var hd, first, total []time.Duration
	events := 0
	for _, s := range stats {
		hd, first, total = append(hd, s.Headers), append(first, s.First), append(total, s.Total)
		events += s.Events
	}
	res.HeadersP50 = Quantiles(hd, 0.5)[0]
	q := Quantiles(first, 0.5, 0.9, 0.99)
	res.FirstP50, res.FirstP90, res.FirstP99 = q[0], q[1], q[2]
	res.TotalP50 = Quantiles(total, 0.5)[0]
	res.EventsPerSec = float64(events) / wall.Seconds()
	if res.Streams > 0 {
		res.CPUPer1k = tu.CPUSeconds / float64(res.Streams) * 1000
		res.SimCPUPer1k = su.CPUSeconds / float64(res.Streams) * 1000
	}
	res.PeakRSSMiB = float64(tu.PeakRSS) / (1 << 20)
	for e := range errs {
		res.Errors = append(res.Errors, e)
	}
	return res, ctx.Err()
}

// PacingResult is the flush check: events paced by the upstream must reach the client one
// by one, as they were sent.
type PacingResult struct {
	Target   string  `json:"target"`
	Streams  int     `json:"streams"`
	GapMS    float64 `json:"upstream_gap_ms"`
	Gaps     int     `json:"gaps"`    // paced gaps observed
	Batched  int     `json:"batched"` // gaps under a quarter of the upstream's
	GapP50   float64 `json:"gap_p50_ms"`
	GapP01   float64 `json:"gap_p1_ms"`
	Failed   int     `json:"failed"`
	FirstErr string  `json:"error,omitempty"`
}

// checkPacing runs n concurrent streams of tokens events paced gap apart and counts the
// paced gaps that arrive batched (under gap/4).
func checkPacing(ctx context.Context, t *Target, n, tokens int, gap time.Duration) PacingResult {
	res := PacingResult{Target: t.Name, Streams: n, GapMS: float64(gap) / float64(time.Millisecond)}
	req := streamRequest(hostOf(t.URL), t.Auth, streamBody(tokens, float64(time.Second)/float64(gap)))
	var (
		mu   sync.Mutex
		gaps []time.Duration
		wg   sync.WaitGroup
	)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &sseClient{addr: hostOf(t.URL)}
			defer c.close()
			st, err := c.do(req, time.Now().Add(30*time.Second), true)
			mu.Lock()
			defer mu.Unlock()
			if err != nil || !st.Done {
				res.Failed++
				if err != nil && res.FirstErr == "" {
					res.FirstErr = err.Error()
				}
				return
			}
			// Events: role, token 1 (unpaced), tokens 2..n (each gap after the previous).
			for k := 2; k <= tokens && k < len(st.At); k++ {
				gaps = append(gaps, st.At[k]-st.At[k-1])
			}
		}()
	}
	wg.Wait()
	res.Gaps = len(gaps)
	for _, g := range gaps {
		if g < gap/4 {
			res.Batched++
		}
	}
	q := Quantiles(gaps, 0.01, 0.5)
	res.GapP01, res.GapP50 = q[0], q[1]
	return res
}

func hostOf(url string) string {
	const p = "http://"
	if len(url) > len(p) && url[:len(p)] == p {
		return url[len(p):]
	}
	return url
}
