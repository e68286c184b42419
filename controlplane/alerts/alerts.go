// Package alerts evaluates the operator's alert rules on an interval and delivers their
// events to webhooks: a balance below a threshold, a budget used above a percentage, a
// route problem (a breaker open or a health problem a node reports), a node's oldest unsent
// usage older than a threshold, a node silent for longer than one.
//
// A condition that holds for a subject (an account, key, route or node) fires once; while
// it keeps holding nothing more is sent, and when it stops a resolved event follows (the
// store keeps what stands, so this holds across restarts and replicas). Each event is a
// JSON POST to the rule's webhook, signed as Sign describes, and retried with exponential
// backoff (RetryBase doubling up to RetryMax) until a 2xx answer or MaxAttempts attempts.
package alerts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/sekgate/gateway/controlplane/store"
)

// Store is what the evaluator reads and writes (controlplane/store provides it).
type Store interface {
	ListAlertRules(ctx context.Context) ([]store.AlertRule, error)
	LowBalances(ctx context.Context, accountID string, below int64) ([]store.AlertFact, error)
	BudgetsUsedAbove(ctx context.Context, accountID string, percent int64) ([]store.AlertFact, error)
	ListNodes(ctx context.Context) ([]store.Node, error)
	ListNodeBreakers(ctx context.Context) (map[string]store.NodeBreakers, error)
	ListNodeRouteHealth(ctx context.Context) (map[string]store.NodeRouteHealth, error)
	SettleAlertRule(ctx context.Context, ruleID string, firing map[string]json.RawMessage,
		resolved func(subject string, since time.Time) json.RawMessage) (int, error)
	ClaimAlertDeliveries(ctx context.Context, lease time.Duration, limit int) ([]store.AlertDelivery, error)
	FinishAlertDelivery(ctx context.Context, id int64, delivered bool, status int, reason string, next *time.Time) error
}

// Config configures an Evaluator.
type Config struct {
	Store Store
	// Interval between evaluations of the rules (default 30 s).
	Interval time.Duration
	// DeliverEvery is how often due deliveries are sent (default 1 s).
	DeliverEvery time.Duration
	// HTTPClient sends the webhooks (default: a client with a 10 s timeout).
	HTTPClient *http.Client
	// MaxAttempts bounds the attempts of one delivery (default 8); RetryBase is the wait
	// after the first failure (default 10 s), doubling after each, at most RetryMax
	// (default 10 min).
	MaxAttempts         int
	RetryBase, RetryMax time.Duration
	// ReportWindow is how recent a node's report of its routes must be to count (default
	// 5 min): a node that stopped reporting is the node_silent rule's business.
	ReportWindow time.Duration
	Now          func() time.Time
	Logger       *slog.Logger
}

// Evaluator runs the rules and sends their events.
type Evaluator struct {
	cfg Config
	log *slog.Logger
}

// New checks cfg and fills its defaults.
func New(cfg Config) (*Evaluator, error) {
	if cfg.Store == nil {
		return nil, errors.New("alerts: store is required")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 30 * time.Second
	}
	if cfg.DeliverEvery <= 0 {
		cfg.DeliverEvery = time.Second
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 8
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = 10 * time.Second
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = 10 * time.Minute
	}
	if cfg.ReportWindow <= 0 {
		cfg.ReportWindow = 5 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Evaluator{cfg: cfg, log: cfg.Logger.With("component", "alerts")}, nil
}

// Run evaluates the rules every Interval and sends due deliveries every DeliverEvery
// until ctx ends; slow webhooks do not hold up the evaluation.
func (e *Evaluator) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { e.every(ctx, e.cfg.Interval, "alert evaluation failed", e.Evaluate) })
	wg.Go(func() { e.every(ctx, e.cfg.DeliverEvery, "alert delivery failed", e.Deliver) })
	wg.Wait()
}

func (e *Evaluator) every(ctx context.Context, d time.Duration, failed string, f func(context.Context) error) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := f(ctx); err != nil && ctx.Err() == nil {
				e.log.Error(failed, "err", err)
			}
		}
	}
}

// Event is the JSON body of a webhook delivery.
type Event struct {
	// Event is "firing" when the condition starts to hold for the subject, "resolved" when
	// it stops.
	Event string `json:"event"`
	Rule  struct {
		ID        string `json:"id"`
		Name      string `json:"name"`
		Kind      string `json:"kind"`
		Threshold int64  `json:"threshold"`
	} `json:"rule"`
	// Subject is the account, key, route or node the condition is about.
	Subject   string `json:"subject"`
	AccountID string `json:"account_id,omitempty"`
	// Value is what was found (micro-SEK, percent or milliseconds, as the threshold); absent
	// on resolved events.
	Value  *int64 `json:"value,omitempty"`
	Detail string `json:"detail"`
	// Since is when the condition started to hold; At when the event was made.
	Since time.Time `json:"since"`
	At    time.Time `json:"at"`
}

// Evaluate runs every enabled rule once and queues the events of what changed.
func (e *Evaluator) Evaluate(ctx context.Context) error {
	rules, err := e.cfg.Store.ListAlertRules(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range rules {
		if !r.Enabled {
			continue
		}
		facts, err := e.facts(ctx, r)
		if err != nil {
			errs = append(errs, fmt.Errorf("rule %s: %w", r.ID, err))
			continue
		}
		now := e.cfg.Now().UTC()
		firing := make(map[string]json.RawMessage, len(facts))
		for _, f := range facts {
			v := f.Value
			firing[f.Subject] = e.payload(r, "firing", f.Subject, f.AccountID, &v, f.Detail, now, now)
		}
		n, err := e.cfg.Store.SettleAlertRule(ctx, r.ID, firing, func(subject string, since time.Time) json.RawMessage {
			return e.payload(r, "resolved", subject, "", nil, "The condition of rule "+r.Name+" no longer holds for "+subject+".", since, now)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("rule %s: %w", r.ID, err))
		} else if n > 0 {
			e.log.Info("alert events queued", "rule", r.ID, "events", n)
		}
	}
	return errors.Join(errs...)
}

func (e *Evaluator) payload(r store.AlertRule, event, subject, account string, value *int64, detail string, since, at time.Time) json.RawMessage {
	ev := Event{Event: event, Subject: subject, AccountID: account, Value: value, Detail: detail, Since: since, At: at}
	ev.Rule.ID, ev.Rule.Name, ev.Rule.Kind, ev.Rule.Threshold = r.ID, r.Name, r.Kind, r.Threshold
	b, _ := json.Marshal(ev) // plain values: cannot fail
	return b
}
