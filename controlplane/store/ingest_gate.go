package store

import (
	"context"
	"time"
)

// ingestGate bounds how many ingest transactions one store runs at once. Every batch locks
// the balance rows of its accounts first, so batches over the same accounts run one at a
// time inside Postgres anyway; past the bound a batch waits here, a parked goroutine,
// instead of as a Postgres backend sleeping on a row lock and being woken for it.
type ingestGate struct {
	slots chan struct{} // nil: no bound
	now   func() time.Time
}

func newIngestGate(limit int, now func() time.Time) *ingestGate {
	g := &ingestGate{now: now}
	if limit > 0 {
		g.slots = make(chan struct{}, limit)
	}
	return g
}

// enter waits for a slot until ctx ends. It returns how long it waited and, when it got
// a slot, the function that gives it back (call it exactly once); when ctx ended first,
// ctx's error and a nil function.
func (g *ingestGate) enter(ctx context.Context) (time.Duration, func(), error) {
	if g.slots == nil {
		return 0, func() {}, nil
	}
	select {
	case g.slots <- struct{}{}:
		return 0, g.leave, nil
	default:
	}
	start := g.now()
	select {
	case g.slots <- struct{}{}:
		return g.now().Sub(start), g.leave, nil
	case <-ctx.Done():
		return g.now().Sub(start), nil, ctx.Err()
	}
}

func (g *ingestGate) leave() { <-g.slots }
