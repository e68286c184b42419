// Package relay is the stage that answers the client from a committed exchange: a whole
// answer, or a stream relayed event by event in the client's protocol (translated from
// chat completions when the route was reached that way), cut at the request's output
// bound, ended with an error event in the client's protocol when it does not complete,
// and recorded when it ends (dataplane/settle, through attempt.Exchange.End).
package relay

import (
	"github.com/sekgate/gateway/dataplane/dialect"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/dataplane/telemetry"
)

// Config is what the relay uses.
type Config struct {
	// Health counts a stream whose server broke the protocol against its route.
	Health    *routing.Health
	Dialects  *dialect.Memo
	Telemetry *telemetry.Metrics
}

// Relayer answers clients from committed exchanges and keeps the streams it relays.
type Relayer struct {
	cfg     Config
	streams streamSet
}

// New builds a Relayer.
func New(cfg Config) *Relayer { return &Relayer{cfg: cfg} }
