package chaos

import (
	"context"
	"fmt"
	"time"
)

// scenario is one fault, injected under load.
type scenario struct {
	name string
	// what the fault is, for the report
	what string
	// slowHostile makes most hostile requests long streams (to be cut by the fault)
	slowHostile bool
	// fault injects the fault, keeps it for down and recovers; it returns the index of a
	// data plane it killed (-1: none).
	fault func(ctx context.Context, s *stack, down time.Duration) (killed int, err error)
}

var scenarios = []scenario{
	{name: "steady", what: "no fault: the baseline",
		fault: func(ctx context.Context, s *stack, down time.Duration) (int, error) {
			sleep(ctx, down)
			return -1, nil
		}},
	{name: "kill-control-plane", what: "control plane SIGKILLed, restarted after the down time",
		fault: func(ctx context.Context, s *stack, down time.Duration) (int, error) {
			s.cp.Kill()
			sleep(ctx, down)
			if err := s.cp.Restart(); err != nil {
				return -1, err
			}
			return -1, s.waitCP(ctx)
		}},
	{name: "term-control-plane", what: "control plane SIGTERMed while batches arrive (graceful stop: batches in flight commit or roll back whole), restarted after the down time",
		fault: func(ctx context.Context, s *stack, down time.Duration) (int, error) {
			s.cp.Stop(30 * time.Second)
			sleep(ctx, down)
			if err := s.cp.Restart(); err != nil {
				return -1, err
			}
			return -1, s.waitCP(ctx)
		}},
	{name: "kill-data-plane", what: "a data plane SIGKILLed with streams in flight, restarted after the down time",
		fault: func(ctx context.Context, s *stack, down time.Duration) (int, error) {
			i := len(s.dps) - 1
			n := s.dps[i]
			// The load balancer's view: no new requests go to the node from now on; the ones
			// in flight are cut by the kill.
			n.setUp(false)
			n.Kill()
			sleep(ctx, down)
			if err := n.Restart(); err != nil {
				return i, err
			}
			if err := s.waitNode(ctx, n); err != nil {
				return i, err
			}
			n.setUp(true)
			return i, nil
		}},
	{name: "restart-postgres", what: "Postgres stopped (fast shutdown), started again after the down time",
		fault: func(ctx context.Context, s *stack, down time.Duration) (int, error) {
			return -1, s.pg.Restart(ctx, down)
		}},
	{name: "kill-hostile-upstream", what: "the hostile upstream SIGKILLed mid-stream, restarted after the down time",
		slowHostile: true,
		fault: func(ctx context.Context, s *stack, down time.Duration) (int, error) {
			s.hostile.Kill()
			sleep(ctx, down)
			if err := s.hostile.Restart(); err != nil {
				return -1, err
			}
			return -1, waitHealthy(ctx, s)
		}},
}

func waitHealthy(ctx context.Context, s *stack) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := s.client.Get(s.hostile.URL() + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		if !sleep(ctx, 100*time.Millisecond) {
			return ctx.Err()
		}
	}
	return fmt.Errorf("%s did not come back", s.hostile.Name)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// run carries out one scenario and checks it.
func (s *stack) run(ctx context.Context, sc scenario) (Row, error) {
	s.step("%s: %s", sc.name, sc.what)
	l := startLoad(ctx, s, s.cfg.Workers, s.cfg.HostileShare, sc.slowHostile)
	sleep(ctx, s.cfg.Warm)
	faultAt := time.Now()
	killed, ferr := sc.fault(ctx, s, s.cfg.Down)
	recovered := time.Now()
	sleep(ctx, s.cfg.Cool)
	results := l.stop()
	row := s.check(ctx, sc, results, killed, faultAt, recovered)
	return row, ferr
}
