package routing

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/loadstat"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Mode is a model's routing policy (snapshot.Model.Routing).
type Mode uint8

// Policies. ModeScored is the default.
const (
	// ModeScored orders each priority group by a cost made of the route's load, its
	// server's waiting queue and KV-cache use, less a bonus for the replica that the
	// request's prefix key prefers (see Weights).
	ModeScored Mode = iota
	// ModeWeighted is a weighted random order, blind to load.
	ModeWeighted
	// ModeLeastLoad orders by load alone (ties in a weighted random order).
	ModeLeastLoad
	// ModeAffinity orders by the prefix key's rendezvous order, with bounded load: a
	// replica whose load would exceed (1+Epsilon) of the group's average is passed over.
	ModeAffinity
)

var modeNames = [...]string{snapshot.RoutingScored, snapshot.RoutingWeighted, snapshot.RoutingLeastLoad, snapshot.RoutingAffinity}

func (m Mode) String() string { return modeNames[m] }

// ModeOf maps a model's routing field to its Mode; empty and unknown names (a newer
// control plane's) are ModeScored.
func ModeOf(name string) Mode {
	for i, n := range modeNames {
		if n == name {
			return Mode(i)
		}
	}
	return ModeScored
}

// Reasons a route was put first (the record's routing.reason).
const (
	ReasonOnly     = "only"     // the best priority group has one route
	ReasonWeighted = "weighted" // weighted random draw
	ReasonAffinity = "affinity" // the replica the prefix key prefers
	ReasonLoad     = "load"     // another replica: the preferred one was busier, or the key is new
)

// Weights are the scored policy's cost terms. A route's cost is
//
//	Load·load + Queue·waiting + KV·kv_high − Affinity·[first in the key's order]
//	  − Affinity/4·[second in the key's order]
//
// where load is the requests at the server (its reported waiting plus running, or this
// node's own in-flight count when larger or when no fresh report is held), waiting the
// requests a new one would wait behind at the server (its report moved by this node's
// dispatches since, plus one when no slot is free), and kv_high
// how far its KV-cache use is above 75 % (0 up to 75 %, 1 when full: below that the cache
// is no constraint). The affinity terms scale with the prefix's size (Request.PrefixBytes
// over FullAffinityBytes, at most 1) and count for a key this node has routed within
// WarmFor; a key it has not seen gets a sixth of the first term only (a tie-break toward
// the replica its next requests will prefer). The lowest cost goes first; ties keep the
// key's order.
type Weights struct {
	Load, Queue, KV, Affinity float64
}

// DefaultWeights: running requests cost little (a replica runs several at once without
// slowing the first token much), a waiting one costs twice as much as running, a full KV
// cache costs like two waiting requests, and a known prefix stays on its replica until
// that replica has four more requests waiting, or eight more running, than another (a cache
// miss on a long prefix costs a full prefill).
var DefaultWeights = Weights{Load: 0.5, Queue: 1, KV: 2, Affinity: 4}

// waitsBehind is how many requests a request sent to a route now would wait behind at its
// server: the estimated queue plus one when no slot is free (capacity known), else the
// reported queue.
func waitsBehind(v loadstat.View) float64 {
	if v.SlotsKnown {
		return max(0, v.Excess+v.Fresh)
	}
	return v.Queue
}

// kvHigh is the part of KV-cache use above 75 %, scaled to 0..1.
func kvHigh(kv float64) float64 { return max(0, kv-0.75) * 4 }

// Request is what ordering a request's routes needs.
type Request struct {
	// Key is the request's prefix key (PrefixKey); HasKey is false for requests without
	// one (then the order among equals is weighted random).
	Key    uint64
	HasKey bool
	// PrefixBytes is the size of the prefix the key was taken from (a client's cache key
	// counts as FullAffinityBytes): the scored policy's affinity terms grow with it up to
	// FullAffinityBytes, since a cache hit saves a prefill as long as the prefix.
	PrefixBytes int
	Mode        Mode
	// Now is the request's arrival (or the end of its wait in the fair queue), unix ns.
	Now int64
	// Held says the request waited in the fair queue: it was let go because a slot freed,
	// and the scored policy sends it there rather than to its prefix's replica, which is
	// still full.
	Held bool
}

// Decision says why the plan's first route was chosen (the record's routing object).
type Decision struct {
	Mode   Mode
	Reason string
	// Waiting is the first route's server-reported waiting queue at dispatch, -1 without a
	// fresh report; InFlight this node's requests there.
	Waiting, InFlight int64
}

// FullAffinityBytes is the prefix size from which the scored policy's affinity terms count
// in full (about 1,600 tokens, whose prefill takes about as long as a few requests'
// decoding); a shorter prefix earns a proportional share.
const FullAffinityBytes = 8192

// maxScored bounds the routes of one priority group that are scored; a larger group is
// ordered by weighted random.
const maxScored = 16

// Order appends to dst every candidate in the order they should be tried: priority groups
// in order, each group in the order of req.Mode. It allocates only when dst is too small.
func (s *Selector) Order(dst, cands []index.Candidate, req Request) ([]index.Candidate, Decision) {
	d := Decision{Mode: req.Mode, Waiting: -1}
	first := len(dst)
	for g := 0; len(cands) > 0; g++ {
		group := firstGroup(cands)
		cands = cands[len(group):]
		start := len(dst)
		dst = append(dst, group...)
		reason := s.orderGroup(dst[start:], req, g == 0)
		if g == 0 {
			d.Reason = reason
		}
	}
	if len(dst) > first && s.Loads != nil {
		v := s.Loads.For(dst[first].Route).View(req.Now, s.Loads.FreshFor)
		d.InFlight = v.InFlight
		if v.Fresh > 0 {
			d.Waiting = int64(v.Waiting + 0.5)
		}
	}
	return dst, d
}

// orderGroup orders one priority group in place and says why its first route is first.
func (s *Selector) orderGroup(group []index.Candidate, req Request, best bool) string {
	if len(group) == 1 {
		return ReasonOnly
	}
	if req.Mode == ModeWeighted || len(group) > maxScored || s.Loads == nil && req.Mode != ModeAffinity {
		s.shuffle(group)
		return ReasonWeighted
	}
	key := req.Key
	if !req.HasKey {
		key = s.rand64()
	}
	// Rendezvous order: highest weighted score first.
	var rz, cost [maxScored]float64
	allZero := true
	for _, c := range group {
		if c.Route.Weight > 0 {
			allZero = false
			break
		}
	}
	for i, c := range group {
		w := float64(c.Route.Weight)
		if allZero {
			w = 1
		}
		rz[i] = rendezvous(key, s.idHash(c.Route), w)
	}
	sortBy(group, rz[:len(group)], true)
	if s.Loads == nil {
		return ReasonAffinity
	}
	var views [maxScored]loadstat.View
	total := 0.0
	for i, c := range group {
		views[i] = s.Loads.For(c.Route).View(req.Now, s.Loads.FreshFor)
		total += views[i].Load()
	}
	warm := req.HasKey && best && s.warm.seen(req.Key, req.Now, s.warmFor())
	if req.HasKey && best {
		s.warm.mark(req.Key, req.Now)
	}
	switch req.Mode {
	case ModeAffinity:
		// Consistent hashing with bounded loads: the first replica in the key's order
		// whose load stays within (1+ε) of the average with this request added.
		limit := (1 + s.epsilon()) * (total + 1) / float64(len(group))
		for i := range group {
			if views[i].Load()+1 <= math.Ceil(limit) {
				if i == 0 {
					return ReasonAffinity
				}
				c := group[i]
				copy(group[1:i+1], group[:i])
				group[0] = c
				return ReasonLoad
			}
		}
		return ReasonAffinity
	case ModeLeastLoad:
		for i := range group {
			cost[i] = views[i].Load() + waitsBehind(views[i]) + s.weights().KV*kvHigh(views[i].KV)
		}
	default:
		w := s.weights()
		for i := range group {
			v := views[i]
			cost[i] = w.Load*v.Load() + w.Queue*waitsBehind(v) + w.KV*kvHigh(v.KV)
		}
		bonus := w.Affinity * min(1, float64(req.PrefixBytes)/FullAffinityBytes)
		if req.Held {
			bonus = 0
		}
		switch {
		case warm:
			cost[0] -= bonus
			cost[1] -= bonus / 4
		case req.HasKey && best:
			cost[0] -= bonus / 6
		}
	}
	moved := sortBy(group, cost[:len(group)], false)
	if warm && !moved {
		return ReasonAffinity
	}
	return ReasonLoad
}

// sortBy sorts group by keys (descending when desc), stably, by insertion (groups are
// small), keeping keys in step; it reports whether the first element changed.
func sortBy(group []index.Candidate, keys []float64, desc bool) bool {
	moved := false
	for i := 1; i < len(group); i++ {
		for j := i; j > 0; j-- {
			a, b := keys[j-1], keys[j]
			if desc && a >= b || !desc && a <= b {
				break
			}
			keys[j-1], keys[j] = b, a
			group[j-1], group[j] = group[j], group[j-1]
			if j == 1 {
				moved = true
			}
		}
	}
	return moved
}

// rendezvous is the weighted rendezvous (highest random weight) score of a route with ID
// hash id and weight w for key: −w/ln(u) with u uniform in (0,1) from the pair's hash, so
// a route wins a share of keys proportional to its weight and every node ranks alike.
func rendezvous(key, id uint64, w float64) float64 {
	if w <= 0 {
		return 0
	}
	h := mix(key ^ mix(id))
	u := (float64(h>>11) + 0.5) / (1 << 53)
	return -w / math.Log(u)
}

// mix is splitmix64's finalizer.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// MaxKeyBytes bounds the part of a prompt's stable start that its prefix key hashes.
const MaxKeyBytes = 4096

// PrefixKey is a request's prefix key: the client's prompt_cache_key when sent, else the
// model and the stable start of the prompt (reqparse.Request.Prefix, its first
// MaxKeyBytes). ok is false when there is neither.
func PrefixKey(model string, cacheKey, prefix []byte) (key uint64, ok bool) {
	var d xxhash.Digest
	d.Reset()
	d.WriteString(model)
	d.Write([]byte{0})
	switch {
	case len(cacheKey) > 0:
		d.Write([]byte{1})
		d.Write(cacheKey)
	case len(prefix) > 0:
		d.Write([]byte{2})
		d.Write(prefix[:min(len(prefix), MaxKeyBytes)])
	default:
		return 0, false
	}
	return d.Sum64(), true
}

// warmTable remembers the prefix keys a node has routed recently: a direct-mapped table
// of atomics (a collision forgets a key, which then goes by load once).
type warmTable struct {
	keys [warmSlots]atomic.Uint64
	at   [warmSlots]atomic.Int64
}

const warmSlots = 4096

func (t *warmTable) seen(key uint64, now int64, within time.Duration) bool {
	i := key % warmSlots
	return t.keys[i].Load() == key && now-t.at[i].Load() < int64(within)
}

func (t *warmTable) mark(key uint64, now int64) {
	i := key % warmSlots
	t.keys[i].Store(key)
	t.at[i].Store(now)
}

// Saturation is when a route counts as full: its server's estimated waiting queue
// (loadstat.View.Excess, negative while slots are free) is at least Queue once its
// capacity is known (else its reported waiting queue is at least max(Queue, 1)), or its
// KV-cache use is at least KV, by a report at least half fresh.
type Saturation struct {
	Queue float64
	KV    float64
}

// DefaultSaturation: no slot is free (Queue 0), or the KV cache is 95 % full. Held at the
// node, requests go in turns the moment a slot frees; in the servers' own queues they
// would go first come, first served.
var DefaultSaturation = Saturation{Queue: 0, KV: 0.95}

// Saturated reports whether every candidate is full (fair queueing holds the request then).
// Without a server report a route never counts as full.
func (s *Selector) Saturated(cands []index.Candidate, now int64) bool {
	if s.Loads == nil || len(cands) == 0 {
		return false
	}
	sat := s.Saturation
	if sat == nil {
		sat = &DefaultSaturation
	}
	for _, c := range cands {
		v := s.Loads.For(c.Route).View(now, s.Loads.FreshFor)
		if v.Fresh < 0.5 {
			return false
		}
		full := v.KV >= sat.KV*v.Fresh
		if v.SlotsKnown {
			full = full || v.Excess >= sat.Queue*v.Fresh
		} else {
			full = full || v.Waiting >= max(sat.Queue, 1)*v.Fresh
		}
		if !full {
			return false
		}
	}
	return true
}
