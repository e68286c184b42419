package settle

import (
	"time"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/tracing"
	"github.com/sekgate/gateway/shared/usage"
)

// Box holds a request's record with its routing detail (room for three attempts inline).
type Box struct {
	// Endpoint is the endpoint the client called.
	Endpoint index.Endpoint
	Rec      usage.Record
	Routing  usage.Routing
	attempt  [3]usage.Attempt
	// Trace is the request's span (not traced: the zero value).
	Trace tracing.Request
	// Upstream is the time spent waiting on upstream attempts until the answer was
	// committed; TTFT, for a stream, the time from arrival until its first event was ready.
	Upstream, TTFT time.Duration
}

// Who names the request a Box records.
type Who struct {
	RequestID string
	At        time.Time
	AccountID string
	KeyID     *string // nil: the console's test box, key_id null
	Model     string
	Endpoint  index.Endpoint
	Stream    bool
	// Policy is the account's residency policy; NodeRegion the node's region.
	Policy, NodeRegion string
}

// Start resets b to the record of the request w.
func (b *Box) Start(w Who) {
	*b = Box{}
	rec := &b.Rec
	rec.RequestID, rec.TS, rec.AccountID = w.RequestID, w.At, w.AccountID
	rec.KeyID = w.KeyID
	rec.Model, rec.Endpoint, rec.Stream = w.Model, w.Endpoint.Path(), w.Stream
	b.Endpoint = w.Endpoint
	b.Routing.Policy, b.Routing.NodeRegion = w.Policy, w.NodeRegion
	b.Routing.Attempts = b.attempt[:0]
	rec.Routing = &b.Routing
}

// AddAttempt appends an attempt at route r and names r in the record as the route tried
// last (the one that answered, if any does).
func (b *Box) AddAttempt(r *index.Route) *usage.Attempt {
	b.Routing.Attempts = append(b.Routing.Attempts, usage.Attempt{Route: r.ID, Provider: r.Provider, Region: r.Region})
	b.Rec.Provider, b.Rec.Residency = r.Provider, r.Region
	return &b.Routing.Attempts[len(b.Routing.Attempts)-1]
}

// LastAttempt is the attempt made last (nil before the first).
func (b *Box) LastAttempt() *usage.Attempt {
	if n := len(b.Routing.Attempts); n > 0 {
		return &b.Routing.Attempts[n-1]
	}
	return nil
}
