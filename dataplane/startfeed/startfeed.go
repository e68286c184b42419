// Package startfeed shares every node's starts and ends of requests at each route with
// the other nodes of the fleet as they happen, through a NATS subject. A server's load
// report (dataplane/scrape, every 50 ms) shows what every node had started by the time it
// was read; what the other nodes started since, a node otherwise learns only from the
// next report, so the nodes split what a report shows free between them (1/N each,
// routing.Selector.Room). With the feed a node counts the others' starts and ends since
// the report as it counts its own (loadstat.Registry.Heard) and, while every live node of
// the fleet is heard on the feed (Live), takes what is free as one node alone would.
//
// Each message is one event of 17 bytes (Event): its kind, the sending node's ID hash,
// and the route's ID hash (the same on every node). Nodes announce themselves every
// Heartbeat; a node is a member while its last announcement or event is younger than
// three heartbeats. Nothing waits on the bus: a publish is a buffered write, and when the
// connection is down the node is not Live and splits reports as without a feed.
package startfeed

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/nats-io/nats.go"

	"github.com/sekgate/gateway/dataplane/fairq"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/shared/internalapi"
)

// Defaults.
const (
	DefaultSubject   = "sekgate.starts"
	DefaultHeartbeat = 100 * time.Millisecond
	// memberFor is how many heartbeats a node stays a member without being heard.
	memberFor = 3
)

// Kind is what an event says.
type Kind byte

// The kinds of event.
const (
	Start     Kind = 's' // a request started at the route
	End       Kind = 'e' // a request ended at the route
	Heartbeat Kind = 'h' // the node is on the feed (route hash 0)
)

// EventSize is the size of an encoded event.
const EventSize = 17

// Event is one message of the feed.
type Event struct {
	Kind  Kind
	Node  uint64 // the sending node's ID hash
	Route uint64 // the route's ID hash (loadstat.Route.IDHash)
}

// Append appends e's encoding to b.
func (e Event) Append(b []byte) []byte {
	b = append(b, byte(e.Kind))
	b = binary.LittleEndian.AppendUint64(b, e.Node)
	return binary.LittleEndian.AppendUint64(b, e.Route)
}

// ErrEvent is returned for a message that is not an event.
var ErrEvent = errors.New("startfeed: not an event")

// Parse decodes one event.
func Parse(b []byte) (Event, error) {
	if len(b) != EventSize {
		return Event{}, fmt.Errorf("%w: %d bytes, want %d", ErrEvent, len(b), EventSize)
	}
	e := Event{Kind: Kind(b[0]), Node: binary.LittleEndian.Uint64(b[1:9]), Route: binary.LittleEndian.Uint64(b[9:])}
	switch e.Kind {
	case Start, End, Heartbeat:
		return e, nil
	}
	return Event{}, fmt.Errorf("%w: kind %q", ErrEvent, b[0])
}

// ValidSubject reports whether s is a subject the feed can publish on: tokens of ASCII
// letters, digits, '-' and '_' joined by dots (no wildcards, no empty token).
func ValidSubject(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for _, tok := range strings.Split(s, ".") {
		if tok == "" {
			return false
		}
		for _, c := range tok {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// Routes is what the feed needs of the node's load registry (*loadstat.Registry).
type Routes interface {
	Heard(idHash uint64, delta int64)
}

// Config configures a Feed.
type Config struct {
	// URL is the NATS server (or cluster) to use: nats://host:port, comma-separated.
	URL string
	// Subject is the subject every node of the fleet publishes on (default
	// DefaultSubject).
	Subject string
	// Node is this node's ID (required).
	Node string
	// Routes hears the other nodes' events (required).
	Routes Routes
	// Nodes is the live nodes of the node's region (the fleet exchange's; fairq.Queue.Place):
	// the feed is Live while at least as many nodes are heard on it. Nil: 1.
	Nodes func() int
	// Heartbeat is how often the node announces itself (default DefaultHeartbeat).
	Heartbeat time.Duration
	// Now is the clock (default time.Now); Logger (default slog.Default()).
	Now    func() time.Time
	Logger *slog.Logger
}

// Feed is a node's connection to the start feed. Safe for concurrent use.
type Feed struct {
	cfg  Config
	self uint64
	nc   *nats.Conn

	mu      sync.Mutex
	members map[uint64]int64 // node ID hash → when last heard (unix ns)

	live    atomic.Bool // as of the last heartbeat
	dropped atomic.Int64
	heard   atomic.Int64
}

// Open connects to the feed. The connection retries in the background when the server is
// not there yet or goes away; until it is up the feed is not Live.
func Open(cfg Config) (*Feed, error) {
	if cfg.Node == "" || cfg.Routes == nil || cfg.URL == "" {
		return nil, errors.New("startfeed: URL, Node and Routes are required")
	}
	if cfg.Subject == "" {
		cfg.Subject = DefaultSubject
	}
	if !ValidSubject(cfg.Subject) {
		return nil, fmt.Errorf("startfeed: subject %q is not a plain NATS subject", cfg.Subject)
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	f := &Feed{cfg: cfg, self: xxhash.Sum64String(cfg.Node), members: map[uint64]int64{}}
	nc, err := nats.Connect(cfg.URL,
		nats.Name("sekgate node "+cfg.Node),
		nats.NoEcho(), // a node's own events are counted where they happen
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250*time.Millisecond),
		nats.ReconnectBufSize(-1), // an event that waited for a reconnect would be stale: dropped
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			cfg.Logger.Warn("start feed disconnected; splitting server reports between nodes", "err", err)
		}),
		nats.ReconnectHandler(func(*nats.Conn) { cfg.Logger.Info("start feed reconnected") }),
	)
	if err != nil {
		return nil, fmt.Errorf("start feed: connect: %w", err)
	}
	f.nc = nc
	if _, err := nc.Subscribe(cfg.Subject, f.receive); err != nil {
		nc.Close()
		return nil, fmt.Errorf("start feed: subscribe %s: %w", cfg.Subject, err)
	}
	_ = nc.FlushTimeout(time.Second) // the subscription reached the server (when connected)
	return f, nil
}

// Moved publishes a start (delta 1) or an end (-1) of this node's at the route of ID hash
// idHash (loadstat.Feed). It does not block: the event is buffered, and dropped while the
// connection is down.
func (f *Feed) Moved(idHash uint64, delta int64) {
	k := Start
	if delta < 0 {
		k = End
	}
	f.publish(Event{Kind: k, Node: f.self, Route: idHash})
}

func (f *Feed) publish(e Event) {
	var buf [EventSize]byte
	if err := f.nc.Publish(f.cfg.Subject, e.Append(buf[:0])); err != nil {
		f.dropped.Add(1)
	}
}

// receive takes one message from another node.
func (f *Feed) receive(m *nats.Msg) {
	e, err := Parse(m.Data)
	if err != nil || e.Node == f.self {
		return
	}
	f.mu.Lock()
	f.members[e.Node] = f.cfg.Now().UnixNano()
	f.mu.Unlock()
	switch e.Kind {
	case Start:
		f.heard.Add(1)
		f.cfg.Routes.Heard(e.Route, 1)
	case End:
		f.heard.Add(1)
		f.cfg.Routes.Heard(e.Route, -1)
	}
}

// Live reports whether the node hears every live node of its region on the feed (as of the
// last heartbeat): then what the other nodes start is known within the bus's delay, and
// the node need not split the servers' reports with them.
func (f *Feed) Live() bool { return f.live.Load() }

// State is the feed's state for the fleet report: internalapi.StartFeedLive or
// internalapi.StartFeedSplit.
func (f *Feed) State() string {
	if f.Live() {
		return internalapi.StartFeedLive
	}
	return internalapi.StartFeedSplit
}

// Run announces the node every Heartbeat and judges Live, until ctx ends; then it closes
// the connection.
func (f *Feed) Run(ctx context.Context) {
	t := time.NewTicker(f.cfg.Heartbeat)
	defer t.Stop()
	defer f.nc.Close()
	for {
		f.beat()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// beat announces the node and judges whether the feed is live.
func (f *Feed) beat() {
	f.publish(Event{Kind: Heartbeat, Node: f.self})
	heard := 1 + f.heardNodes(f.cfg.Now().UnixNano())
	want := 1
	if f.cfg.Nodes != nil {
		want = f.cfg.Nodes()
	}
	live := f.nc.IsConnected() && heard >= want
	if f.live.Swap(live) != live {
		f.cfg.Logger.Info("start feed", "live", live, "nodes_heard", heard, "fleet_nodes", want)
	}
}

// heardNodes is the number of other nodes heard within memberFor heartbeats of now
// (forgetting the older).
func (f *Feed) heardNodes(now int64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for id, at := range f.members {
		if now-at > int64(memberFor*f.cfg.Heartbeat) {
			delete(f.members, id)
			continue
		}
		n++
	}
	return n
}

// Node is what the feed serves on a node: its route selector, whose loads hear the other
// nodes and tell the feed of the node's own, and its fair queue (nil: none), asked for the
// fleet's live nodes. Another node's end does not kick the fair queue: every node would
// let a held request go for the one slot freed; a held request goes when its own node's
// request ends or at the queue's next poll.
type Node struct {
	Selector *routing.Selector
	Queue    *fairq.Queue
}

// OpenFor opens the feed for a node (cfg's Routes and Nodes are set from it) and
// wires it in: the selector's loads tell it the node's starts and ends, and its Room takes
// the servers' free slots as one node alone while the feed is Live.
func OpenFor(cfg Config, n Node) (*Feed, error) {
	if n.Selector == nil || n.Selector.Loads == nil {
		return nil, errors.New("startfeed: a selector with a load registry is required")
	}
	cfg.Routes = n.Selector.Loads
	if q := n.Queue; q != nil {
		cfg.Nodes = func() int { nodes, _ := q.Place(); return nodes }
	}
	f, err := Open(cfg)
	if err != nil {
		return nil, err
	}
	n.Selector.Loads.SetFeed(f)
	n.Selector.Alone = f.Live
	return f, nil
}
