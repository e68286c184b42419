package startfeed

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/sekgate/gateway/internal/feedbus"
	"github.com/sekgate/gateway/internal/poll"
)

func TestParse(t *testing.T) {
	ok := Event{Kind: Start, Node: 7, Route: 1 << 60}.Append(nil)
	for _, tc := range []struct {
		name string
		in   []byte
		want Event
		err  bool
	}{
		{"start", ok, Event{Kind: Start, Node: 7, Route: 1 << 60}, false},
		{"end", Event{Kind: End, Node: 1, Route: 2}.Append(nil), Event{Kind: End, Node: 1, Route: 2}, false},
		{"heartbeat", Event{Kind: Heartbeat, Node: 3}.Append(nil), Event{Kind: Heartbeat, Node: 3}, false},
		{"empty", nil, Event{}, true},
		{"short", ok[:16], Event{}, true},
		{"long", append(bytes.Clone(ok), 0), Event{}, true},
		{"unknown kind", append([]byte{'x'}, ok[1:]...), Event{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("Parse = %+v, %v; want %+v, error %v", got, err, tc.want, tc.err)
			}
			if err != nil && !errors.Is(err, ErrEvent) {
				t.Fatalf("error %v is not ErrEvent", err)
			}
		})
	}
}

func TestValidSubject(t *testing.T) {
	for s, want := range map[string]bool{
		"sekgate.starts": true, "fleet-a.starts_2": true, "x": true,
		"": false, "a..b": false, ".a": false, "a.": false, "a.*": false, "a.>": false, "a b": false, "å": false,
	} {
		if got := ValidSubject(s); got != want {
			t.Errorf("ValidSubject(%q) = %v, want %v", s, got, want)
		}
	}
}

// FuzzParse: any message is an event that encodes back to itself, or ErrEvent.
func FuzzParse(f *testing.F) {
	f.Add(Event{Kind: Start, Node: 1, Route: 2}.Append(nil))
	f.Add([]byte("h"))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrEvent) {
				t.Fatalf("error %v is not ErrEvent", err)
			}
			return
		}
		if !bytes.Equal(e.Append(nil), b) {
			t.Fatalf("%x parsed to %+v, which encodes to %x", b, e, e.Append(nil))
		}
	})
}

// heardLog is a load registry that records what it heard.
type heardLog struct {
	mu  sync.Mutex
	net map[uint64]int64
}

func (h *heardLog) Heard(id uint64, d int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.net[id] += d
}

func (h *heardLog) get(id uint64) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.net[id]
}

type member struct {
	f     *Feed
	heard *heardLog
}

func join(t *testing.T, ctx context.Context, url, id string, nodes int) member {
	t.Helper()
	m := member{heard: &heardLog{net: map[uint64]int64{}}}
	f, err := Open(Config{URL: url, Node: id, Routes: m.heard, Nodes: func() int { return nodes },
		Heartbeat: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	go f.Run(ctx)
	m.f = f
	return m
}

// TestNodesHearEachOther: nodes on one feed hear each other's starts and ends (never their
// own), and are live only while every node of the fleet is heard and the server is up.
func TestNodesHearEachOther(t *testing.T) {
	bus, err := feedbus.Start("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := join(t, ctx, bus.URL(), "node-a", 3)
	b := join(t, ctx, bus.URL(), "node-b", 3)
	// Each hears the other's heartbeats: both subscriptions are in place.
	for _, m := range []member{a, b} {
		if !poll.Wait(10*time.Second, func() bool { return m.f.heardNodes(time.Now().UnixNano()) == 1 }) {
			t.Fatal("the two nodes do not hear each other's heartbeats")
		}
	}
	const route = 42
	a.f.Moved(route, 1)
	a.f.Moved(route, 1)
	a.f.Moved(route, -1)
	if !poll.Wait(10*time.Second, func() bool { return b.heard.get(route) == 1 }) {
		t.Fatalf("b heard a net %d at the route, want 1", b.heard.get(route))
	}
	if got := a.heard.get(route); got != 0 {
		t.Fatalf("a heard its own events: %d", got)
	}
	if poll.Wait(100*time.Millisecond, a.f.Live) {
		t.Fatal("live with two of three nodes on the feed")
	}
	c := join(t, ctx, bus.URL(), "node-c", 3)
	for _, m := range []member{a, b, c} {
		if !poll.Wait(10*time.Second, m.f.Live) {
			t.Fatal("not live with every node of the fleet on the feed")
		}
	}
	bus.Close()
	if !poll.Wait(10*time.Second, func() bool { return !a.f.Live() }) {
		t.Fatal("still live after the feed's server went away")
	}
	a.f.Moved(route, 1) // dropped or buffered while disconnected: never blocks
}
