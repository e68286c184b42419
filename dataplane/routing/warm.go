package routing

import (
	"sync"
	"time"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/loadstat"
)

// Warming a key's second home. A tenant's requests go to the home that holds its prefix;
// the other home earns a smaller bonus and is where a burst spills, paying a full prefill
// there while the client waits (in make bench-routing's (a), 750 ms against 30 warm: the
// tail of its time to first token). With WarmHomes, once a key is reused (sent more than
// once: a tenant, not a one-off prompt), the request served at one home sends a copy of
// itself to the other home, cut to one output token and not streamed, when that server
// has slots to spare: its prefill fills the other home's cache while nobody waits, and
// from then on the key's requests take whichever of two warm homes is less loaded.
//
// A copy is nobody's request: it is not charged, recorded or relayed, and its answer is
// discarded (it is counted by the node's metrics). Each route has at most one copy in
// flight, and a copy is only sent where at least two slots are free beyond the server's
// queue (none waiting), so it never takes a slot a client is waiting for. A key is marked
// at the home once its copy is answered, and that placement is shared with the fleet like
// any other, so every node then sees both homes warm. In a fleet one node sends each
// route's copies (warmsAt).

// warmSlots is how many free slots a home needs for a copy to be sent there.
const warmSlots = 2

// A copy is sent only to a server whose KV-cache size is known (vLLM's
// vllm:cache_config_info), only while the reused keys warm there, this one added, take at
// most warmCacheShare of that cache, and only while the group's caches of known size could
// hold two copies of every reused key warm in them, this one added, in that share of
// their room together; each key is taken to be as long as this one's prefix. A second
// copy of a tenant's prefix must not push the first ones out of caches too small for
// both: in make bench-routing's (a), whose replicas' caches hold about eight of its
// sixteen 1,200-token prefixes each, copies to every second home took its prefix hits
// from 92 to 83 % and its time to first token's p99 from 96 to 751 ms, and with room
// for one copy of every key (the pool's half) those sent while few tenants had arrived
// overfilled the caches once the rest came (over eight runs, 17 requests cold against
// 11 without copies). A prefix's tokens are its bytes over the route's prompts' bytes per
// token as its server reported them (loadstat.Route.PromptBytesPerToken; the serving
// home's while the other has none), or over warmBytesPerToken before any report.
//
// A tenant moving to its home (toWarm) needs room there alone, within warmMoveShare: the
// homes' bounds already spread the keys, and the cache left behind ages out.
const (
	warmCacheShare    = 0.5
	warmMoveShare     = 0.75
	warmBytesPerToken = 4
)

// copyFor is how long a copy counts as holding its prefix at the home it went to, unless
// a request sent there since renews it: a copy nobody uses ages out of the server's cache
// like anything unused, sooner than WarmFor under pressure, and a request sent to a home
// believed warm that is not pays the full prefill a copy was to spare. While the tenant
// keeps sending, the next copy refreshes it (at the cost of a cache hit and one token
// when it is still there).
const copyFor = 10 * time.Second

// warmups are the routes with a copy in flight, by tag.
type warmups struct {
	mu      sync.Mutex
	pending map[uint32]struct{}
}

// claim reports whether a copy may be sent to the route tagged tag (none is in flight
// there), and if so counts it in flight until done.
func (w *warmups) claim(tag uint32) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.pending[tag]; ok {
		return false
	}
	if w.pending == nil {
		w.pending = make(map[uint32]struct{})
	}
	w.pending[tag] = struct{}{}
	return true
}

func (w *warmups) done(tag uint32) {
	w.mu.Lock()
	delete(w.pending, tag)
	w.mu.Unlock()
}

// Warm is a copy to send: the key and the home to warm with it (tag: the home's).
type Warm struct {
	Key  uint64
	Cand index.Candidate
	tag  uint32
}

// toWarm returns the home to warm for a request with key placed first at group[idx[0]]
// (group sorted by cost, idx its original places: the homes were 0 and 1), or false.
//
// A request served at a route that holds its prefix but is not one of its homes (the
// homes' bounds moved them since: a key counts from its second request, so tenants whose
// first requests came together may start on one replica past its bound) warms the key's
// first home instead, while neither home holds it: the copy moves the tenant, whose
// requests then go to the home that holds its prefix (holdBonus) with nobody waiting for
// its prefill. The move's room is that home's alone (roomFor): its old place ages out.
func (s *Selector) toWarm(group []index.Candidate, idx []int, cached []bool, views []loadstat.View, req Request, tags []uint32) (Warm, bool) {
	first := idx[0]
	if !s.WarmHomes || len(group) < homes || !cached[first] {
		return Warm{}, false
	}
	move := first >= homes
	other := 1 - first
	switch {
	case move && !cached[0] && !cached[1]:
		other = 0
	case move || cached[other]:
		return Warm{}, false
	}
	v := views[other]
	if v.Queue >= 0.5 || freeSlots(v, s.saturation()) < warmSlots || !s.sent.counted(req.Key) || !s.warmsAt(tags[other]) {
		return Warm{}, false
	}
	j := 0
	for idx[j] != other {
		j++
	}
	if !s.roomFor(group, idx, tags, j, req.PrefixBytes, move) || !s.warming.claim(tags[other]) {
		return Warm{}, false
	}
	return Warm{Key: req.Key, Cand: group[j], tag: tags[other]}, true
}

// roomFor reports whether the caches have room for a copy of a prefix of the given bytes
// at group[j] (group sorted, idx its original places and tags by them; group[0] serves
// the request): see warmCacheShare. A tenant's move to its home (move) needs room there
// alone, within warmMoveShare: the pool's bound does not apply, since the place it leaves
// ages out and the caches together hold no more than before.
func (s *Selector) roomFor(group []index.Candidate, idx []int, tags []uint32, j, bytes int, move bool) bool {
	to := s.Loads.For(group[j].Route)
	prefix := prefixTokens(bytes, to, s.Loads.For(group[0].Route))
	at := float64(s.sent.keysAt(tags[idx[j]]))
	if move {
		return (at+1)*prefix <= warmMoveShare*float64(to.CacheTokens())
	}
	var keys, size float64 // the group's reused keys warm, and the KV caches they are in
	for i, c := range group {
		if n := s.Loads.For(c.Route).CacheTokens(); n > 0 {
			keys, size = keys+float64(s.sent.keysAt(tags[idx[i]])), size+float64(n)
		}
	}
	return 2*(keys+1)*prefix <= warmCacheShare*size && (at+1)*prefix <= warmCacheShare*float64(to.CacheTokens())
}

// prefixTokens is a prefix's tokens: its bytes over the first of routes' prompts' bytes
// per token that is known, else over warmBytesPerToken.
func prefixTokens(bytes int, routes ...*loadstat.Route) float64 {
	for _, r := range routes {
		if bpt := r.PromptBytesPerToken(); bpt > 0 {
			return float64(bytes) / bpt
		}
	}
	return float64(bytes) / warmBytesPerToken
}

// warmsAt reports whether this node sends the copies to the route tagged tag: in a fleet,
// each route's copies are sent by one node (its tag modulo the live nodes is the node's
// place, fairq.Queue.Place), which counts every one of them at once and the other nodes'
// placements within a fleet interval; others would each fill the same cache before
// learning of the others' copies. A node that does not know its place sends none.
func (s *Selector) warmsAt(tag uint32) bool {
	n, rank := s.place()
	if n == 1 {
		return true
	}
	return rank > 0 && int(tag%uint32(n)) == rank-1
}

// Warmed is told when a copy Order asked for (Decision.Warm) is over: ok when its server
// answered it at now (the key then counts as held there for copyFor), false when it
// failed or was not sent. Every Warm returned must be ended by exactly one Warmed.
func (s *Selector) Warmed(w Warm, ok bool, now int64) {
	if ok {
		// Warm for copyFor from now: marked as sent that long before WarmFor ends,
		// unless a request sent since marked it later.
		at := now - int64(max(0, s.warmFor()-copyFor))
		s.sent.put(w.Key, w.tag, at&^1, true)
	}
	s.warming.done(w.tag)
}
