package node

import (
	"errors"
	"time"

	"github.com/sekgate/gateway/dataplane/fairq"
	"github.com/sekgate/gateway/dataplane/loadstat"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/dataplane/scrape"
)

// routingOptions are the settings of load-aware routing and the fair queue
// (docs/routing.md): how often the model servers' metrics are read, when a route counts as
// full, and how long and how many requests the node holds while every route is.
type routingOptions struct {
	ScrapeInterval time.Duration      `flag:"scrape-interval" default:"50ms" help:"how often each route's server metrics are read while the route is in use"`
	Saturation     routing.Saturation // --saturation-queue, --saturation-kv
	FairQueue      bool               `flag:"fair-queue" default:"true" help:"hold requests in per-account turns while every route of their model is full"`
	Queue          fairq.Config       // --fair-queue-*
	WarmHomes      bool               `flag:"warm-homes" default:"true" help:"copy a returning tenant's request (one token) to its prefix's other home replica when idle"`
}

func (o *routingOptions) validate() error {
	switch {
	case o.ScrapeInterval < 10*time.Millisecond:
		return errors.New("--scrape-interval must be at least 10ms")
	case o.Saturation.Queue < 0:
		return errors.New("--saturation-queue must not be negative")
	case o.Saturation.KV <= 0 || o.Saturation.KV > 1:
		return errors.New("--saturation-kv must be above 0 and at most 1")
	case o.Queue.MaxWait <= 0 || o.Queue.MaxDepth <= 0 || o.Queue.AccountDepth <= 0:
		return errors.New("--fair-queue-max-wait, --fair-queue-depth and --fair-queue-account-depth must be positive")
	}
	return nil
}

// queueConfig is the fair queue's configuration: --fair-queue-headroom 0 means none, which
// fairq.Config says with a negative value (its 0 is the default).
func (o *routingOptions) queueConfig() fairq.Config {
	c := o.Queue
	if c.Headroom == 0 {
		c.Headroom = -1
	}
	return c
}

// selector returns the node's route selector, its load registry (a report counts in full
// for scrape.FreshFor the interval: 187.5 ms at the default 50 ms, as make bench-routing
// measures) and the scraper that fills it.
func (o *routingOptions) selector(cfg scrape.Config) (*routing.Selector, *scrape.Scraper) {
	loads := loadstat.NewRegistry()
	loads.FreshFor = scrape.FreshFor(o.ScrapeInterval)
	sat := o.Saturation
	cfg.Loads, cfg.Interval = loads, o.ScrapeInterval
	return &routing.Selector{Loads: loads, Saturation: &sat, WarmHomes: o.WarmHomes}, scrape.New(cfg)
}
