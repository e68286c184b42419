package dialect

import (
	"sync"
	"sync/atomic"

	"github.com/sekgate/gateway/dataplane/index"
)

// Memo remembers the server detected from the answers of each route that names
// none (Detect), so that later requests on it use that server's table. A route
// whose first detectTries whole answers show no server's sign is taken for a plain
// OpenAI-compatible server and its answers are no longer searched (every server's whole
// answers carry their sign; an operator can still name the route's server).
type Memo struct{ m sync.Map } // memoKey -> *memoEntry

type memoKey struct{ route, baseURL string }

// detectTries is how many whole answers without a sign a route's detection reads.
const detectTries = 16

type memoEntry struct {
	server atomic.Uint32 // 1 + the Server detected; 0 while none is
	misses atomic.Int32  // whole answers read without a sign
}

// entry is route r's entry, made on first use.
func (dm *Memo) entry(r *index.Route) *memoEntry {
	if e := dm.lookup(r); e != nil {
		return e
	}
	v, _ := dm.m.LoadOrStore(memoKey{r.ID, r.BaseURL}, new(memoEntry))
	return v.(*memoEntry)
}

// lookup is route r's entry, nil before its first use.
func (dm *Memo) lookup(r *index.Route) *memoEntry {
	if v, ok := dm.m.Load(memoKey{r.ID, r.BaseURL}); ok {
		return v.(*memoEntry)
	}
	return nil
}

// Of is the table of route r's server: the one it names, else the one detected, else
// OpenAI's (which reads every server's members).
func (dm *Memo) Of(r *index.Route) *Dialect {
	if r.Server != "" {
		return Of(r.Server)
	}
	if e := dm.lookup(r); e != nil {
		if s := e.server.Load(); s > 0 {
			return For(Server(s - 1))
		}
	}
	return Default()
}

// Detecting reports whether route r's server is still to be detected.
func (dm *Memo) Detecting(r *index.Route) bool {
	if r.Server != "" {
		return false
	}
	e := dm.lookup(r)
	return e == nil || e.open()
}

// open reports whether the route's server is neither detected nor given up on.
func (e *memoEntry) open() bool { return e.server.Load() == 0 && e.misses.Load() < detectTries }

// Learned records the server a stream on route r showed (detected: it showed one).
func (dm *Memo) Learned(r *index.Route, s Server, detected bool) {
	if r != nil && r.Server == "" && detected {
		dm.entry(r).server.CompareAndSwap(0, uint32(s)+1)
	}
}

// Learn detects route r's server from a whole answer b (without allocating while nothing
// is found), until it is known or detectTries answers showed none.
func (dm *Memo) Learn(r *index.Route, b []byte) {
	if r.Server != "" {
		return
	}
	e := dm.entry(r)
	if !e.open() {
		return
	}
	if s, ok := Detect(b); ok {
		e.server.CompareAndSwap(0, uint32(s)+1)
		return
	}
	e.misses.Add(1)
}
