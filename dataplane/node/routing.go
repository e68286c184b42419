package node

import (
	"errors"
	"flag"
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
	scrapeInterval time.Duration
	saturation     routing.Saturation
	fairQueue      bool
	queue          fairq.Config
}

func (o *routingOptions) register(fs *flag.FlagSet) {
	fs.DurationVar(&o.scrapeInterval, "scrape-interval", 200*time.Millisecond, "how often each route's server metrics are read while the route is in use")
	fs.Float64Var(&o.saturation.Queue, "saturation-queue", routing.DefaultSaturation.Queue, "a route is full when its server's estimated waiting queue reaches this")
	fs.Float64Var(&o.saturation.KV, "saturation-kv", routing.DefaultSaturation.KV, "a route is full when its server's KV-cache use reaches this share (0 to 1)")
	fs.BoolVar(&o.fairQueue, "fair-queue", true, "hold requests in per-account turns while every route of their model is full")
	fs.DurationVar(&o.queue.MaxWait, "fair-queue-max-wait", 5*time.Second, "longest wait in the fair queue before 429")
	fs.IntVar(&o.queue.MaxDepth, "fair-queue-depth", 1024, "requests the fair queue holds in all before 429")
	fs.IntVar(&o.queue.AccountDepth, "fair-queue-account-depth", 64, "requests the fair queue holds per account before 429")
	fs.IntVar(&o.queue.Headroom, "fair-queue-headroom", 2, "free slots an account above its share leaves for the others (negative: none)")
}

func (o *routingOptions) validate() error {
	switch {
	case o.scrapeInterval < 10*time.Millisecond:
		return errors.New("--scrape-interval must be at least 10ms")
	case o.saturation.Queue < 0:
		return errors.New("--saturation-queue must not be negative")
	case o.saturation.KV <= 0 || o.saturation.KV > 1:
		return errors.New("--saturation-kv must be above 0 and at most 1")
	case o.queue.MaxWait <= 0 || o.queue.MaxDepth <= 0 || o.queue.AccountDepth <= 0:
		return errors.New("--fair-queue-max-wait, --fair-queue-depth and --fair-queue-account-depth must be positive")
	}
	return nil
}

// queueConfig is the fair queue's configuration: --fair-queue-headroom 0 means none, which
// fairq.Config says with a negative value (its 0 is the default).
func (o *routingOptions) queueConfig() fairq.Config {
	c := o.queue
	if c.Headroom == 0 {
		c.Headroom = -1
	}
	return c
}

// selector returns the node's route selector, its load registry (a report counts in full
// for 3¾ scrape intervals: 750 ms at the default 200 ms, as make bench-routing measures)
// and the scraper that fills it.
func (o *routingOptions) selector(cfg scrape.Config) (*routing.Selector, *scrape.Scraper) {
	loads := loadstat.NewRegistry()
	loads.FreshFor = o.scrapeInterval * 15 / 4
	sat := o.saturation
	cfg.Loads, cfg.Interval = loads, o.scrapeInterval
	return &routing.Selector{Loads: loads, Saturation: &sat}, scrape.New(cfg)
}
