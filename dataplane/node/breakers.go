package node

import (
	"sync/atomic"

	"github.com/sekgate/gateway/dataplane/routing"
)

// breakerReport lists the routes whose breaker is not closed for the node's snapshot polls
// (the console shows them); the breakers are made after the sync client, hence the pointer.
type breakerReport struct {
	h atomic.Pointer[routing.Health]
}

func (b *breakerReport) set(h *routing.Health) { b.h.Store(h) }

func (b *breakerReport) notClosed() map[string]string {
	h := b.h.Load()
	if h == nil {
		return nil
	}
	out := map[string]string{}
	h.EachState(func(route, state string) {
		if state != "closed" {
			out[route] = state
		}
	})
	return out
}
