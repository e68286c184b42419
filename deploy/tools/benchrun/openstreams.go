package benchrun

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// OpenStreamsResult is the memory a target needs per open stream.
type OpenStreamsResult struct {
	Target   string  `json:"target"`
	Want     int     `json:"want"`
	Opened   int     `json:"opened"`
	Failed   int     `json:"failed"`
	OpenSecs float64 `json:"open_s"`
	// RSS of the target before, with every stream open (after a short hold), and its peak.
	BaselineMiB float64 `json:"baseline_rss_mib"`
	OpenMiB     float64 `json:"open_rss_mib"`
	PeakMiB     float64 `json:"peak_rss_mib"`
	// (open RSS - baseline) / opened streams.
	PerStreamKiB float64 `json:"per_stream_kib"`
	// Projected RSS at 10,000 open streams: baseline + 10,000 × per stream.
	At10kMiB float64 `json:"rss_at_10k_mib"`
	// Upstream streams the simulator still had open 1 s after the clients went away, and
	// how long until all were gone (-1: not within the run's drain wait). A proxy that notices a departed
	// client only when its next write fails keeps the upstream open until the next events
	// (here a second or two).
	LeftOpen  int      `json:"upstream_open_1s_after_close"`
	DrainSecs float64  `json:"upstream_drain_s"`
	Errors    []string `json:"errors,omitempty"`
}

// openStreams opens n streams through t that the simulator paces at one token per second,
// so they stay open with a trickle of events; once each has delivered its first event it samples the
// target's RSS, then closes them all. Opening is paced (rampPerSec) and bounded by a
// deadline; streams that fail are counted, not retried.
func openStreams(ctx context.Context, t *Target, simURL string, n, rampPerSec int, drainWait time.Duration, progress func(string)) (OpenStreamsResult, error) {
	res := OpenStreamsResult{Target: t.Name, Want: n}
	req := streamRequest(hostOf(t.URL), t.Auth, streamBody(100000, 1))
	inFlight0, err := simInFlight(simURL)
	if err != nil {
		return res, err
	}
	before, err := ReadMemory(t.PID)
	if err != nil {
		return res, err
	}
	_ = ResetPeak(t.PID)
	res.BaselineMiB = mib(before.RSS)

	var (
		mu     sync.Mutex
		conns  []net.Conn
		errs   = map[string]bool{}
		opened atomic.Int64
		failed atomic.Int64
		wg     sync.WaitGroup
	)
	fail := func(err error) {
		failed.Add(1)
		mu.Lock()
		if len(errs) < 5 {
			errs[err.Error()] = true
		}
		mu.Unlock()
	}
	stop := make(chan struct{})
	sem := make(chan struct{}, 256) // dials in flight
	start := time.Now()
	openDeadline := start.Add(time.Duration(n/rampPerSec)*time.Second + 30*time.Second)
	for i := 0; i < n && ctx.Err() == nil; i++ {
		if d := time.Until(start.Add(time.Duration(float64(i) / float64(rampPerSec) * float64(time.Second)))); d > 0 {
			time.Sleep(d)
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.DialTimeout("tcp", hostOf(t.URL), 5*time.Second)
			if err != nil {
				<-sem
				fail(err)
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			_ = conn.SetDeadline(openDeadline)
			br := bufio.NewReaderSize(conn, 2<<10)
			released := false
			release := func() {
				if !released {
					released = true
					<-sem
				}
			}
			err = func() error {
				defer release()
				if _, err := conn.Write(req); err != nil {
					return err
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					return err
				}
				if resp.StatusCode != 200 {
					return fmt.Errorf("status %d", resp.StatusCode)
				}
				lr := bufio.NewReaderSize(resp.Body, 2<<10)
				for { // until the first event's blank line
					line, err := lr.ReadSlice('\n')
					if err != nil {
						return err
					}
					if len(line) <= 2 && (line[0] == '\n' || line[0] == '\r') {
						break
					}
				}
				opened.Add(1)
				release()
				_ = conn.SetDeadline(time.Time{})
				// Hold the stream, reading its rare events, until the connection is closed.
				buf := make([]byte, 512)
				for {
					if _, err := lr.Read(buf); err != nil {
						return nil
					}
				}
			}()
			if err != nil {
				select {
				case <-stop:
				default:
					fail(err)
				}
				conn.Close()
			}
		}()
		if i > 0 && i%max(n/5, 1) == 0 {
			progress(fmt.Sprintf("%s: %d of %d streams requested, %d open", t.Name, i, n, opened.Load()))
		}
	}
	// Wait for every stream to be open or failed.
	for time.Now().Before(openDeadline) && ctx.Err() == nil && int(opened.Load()+failed.Load()) < n {
		time.Sleep(50 * time.Millisecond)
	}
	res.OpenSecs = time.Since(start).Seconds()
	time.Sleep(time.Second) // let the target settle with all streams open
	with, err := ReadMemory(t.PID)
	if err != nil {
		close(stop)
		wg.Wait()
		return res, err
	}
	res.Opened, res.Failed = int(opened.Load()), int(failed.Load())
	res.OpenMiB, res.PeakMiB = mib(with.RSS), mib(with.Peak)
	if res.Opened > 0 {
		per := float64(with.RSS-before.RSS) / float64(res.Opened)
		res.PerStreamKiB = per / 1024
		res.At10kMiB = mib(before.RSS + int64(per*10000))
	}
	progress(fmt.Sprintf("%s: %d streams open (%d failed), RSS %.0f MiB (baseline %.0f MiB), closing",
		t.Name, res.Opened, res.Failed, res.OpenMiB, res.BaselineMiB))
	close(stop)
	mu.Lock()
	for _, c := range conns {
		c.Close()
	}
	mu.Unlock()
	wg.Wait()
	closed := time.Now()
	// The target must cancel the upstream streams of the clients that left.
	res.LeftOpen, res.DrainSecs = -1, -1
	for {
		left, err := simInFlight(simURL)
		if err != nil {
			return res, err
		}
		left -= inFlight0
		since := time.Since(closed)
		if res.LeftOpen < 0 && (since >= time.Second || left <= 0) {
			res.LeftOpen = int(max(left, 0))
		}
		if left <= 0 {
			res.DrainSecs = since.Seconds()
			break
		}
		if since > drainWait {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for e := range errs {
		res.Errors = append(res.Errors, e)
	}
	if res.Opened == 0 {
		return res, errors.New("no stream opened")
	}
	return res, ctx.Err()
}

func simInFlight(simURL string) (int64, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(simURL + "/sim/stats")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var st struct {
		InFlight int64 `json:"in_flight"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return 0, fmt.Errorf("sim stats: %w", err)
	}
	return st.InFlight, nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
