package routing

import (
	"math"

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
//	Load·load + Queue·waiting + KV·kv_high − Affinity·size·[holds the prefix]
//	  − Affinity·size/4·[one of the key's two homes, not holding it yet]
//
// where load is the requests at the server (its reported waiting plus running, or this
// node's own in-flight count when larger or when no fresh report is held), waiting the
// requests a new one would wait behind at the server (its report moved by this node's
// dispatches since, plus one when no slot is free), and kv_high how far its KV-cache use
// is above 75 % (0 up to 75 %, 1 when full: below that the cache is no constraint). A
// route holds the prefix when this node sent it a request with the same prefix key within
// WarmFor; the key's homes are two routes every node picks alike (homes.go). size is the
// prefix's size over FullAffinityBytes, at most 1. A home, or a route sent the key within
// recentHold, that holds the prefix earns more once its server's pace is known: the waits
// a prefill of the prefix elsewhere would cost (holdBonus). The lowest cost goes first;
// ties keep the key's order.
type Weights struct {
	Load, Queue, KV, Affinity float64
}

// DefaultWeights: running requests cost little (a replica runs several at once without
// slowing the first token much), a waiting one costs twice as much as running, a full KV
// cache costs like two waiting requests, and a long prefix stays on a replica that holds
// it until that replica has four more requests waiting, or eight more running, than
// another (a cache miss on a long prefix costs a full prefill); it spills to its second
// home, not holding it yet, at three quarters of that.
var DefaultWeights = Weights{Load: 0.5, Queue: 1, KV: 2, Affinity: 4}

// waitsBehind is how many requests a request sent to a route now would wait behind at its
// server: the estimated queue plus one when no slot is free (capacity known), else the
// reported queue.
func waitsBehind(v loadstat.View) float64 {
	if v.SlotsKnown() {
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
	// Heavy says the request's account has more than its share of the servers in flight
	// (fairq.Queue.Heavy): the scored policy sends it to a route with more than one free
	// slot when one has, leaving each server's last free slot to the other accounts.
	// With Turns (fairq.Grant), to a route where one of the slots beyond its
	// server's last free one is this node's turn (turnSlots).
	Heavy, Turns bool
}

// Decision says why the plan's first route was chosen (the record's routing object).
type Decision struct {
	Mode   Mode
	Reason string
	// Waiting is the first route's server-reported waiting queue at dispatch, -1 without a
	// fresh report; InFlight this node's requests there.
	Waiting, InFlight int64
	// Warm, when HasWarm, is a copy of the request to send to the key's other home
	// (warm.go); the caller ends it with Selector.Warmed.
	Warm    Warm
	HasWarm bool
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
		reason := s.orderGroup(dst[start:], req, g == 0, &d)
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
func (s *Selector) orderGroup(group []index.Candidate, req Request, best bool, d *Decision) string {
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
	var rz, cost, ws [maxScored]float64
	for i, w := range groupWeights(group, ws[:0]) {
		rz[i] = rendezvous(key, s.idHash(group[i].Route), w)
	}
	sortBy(group, rz[:len(group)], true, nil)
	if s.Loads == nil {
		return ReasonAffinity
	}
	var views [maxScored]loadstat.View
	var tags [maxScored]uint32
	total := 0.0
	for i, c := range group {
		lr := s.Loads.For(c.Route)
		views[i] = lr.View(req.Now, s.Loads.FreshFor)
		tags[i] = tagOf(lr.IDHash)
		total += views[i].Load()
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
		return s.score(group, req, best, views[:len(group)], tags[:len(group)], d)
	}
	sortBy(group, cost[:len(group)], false, nil)
	return ReasonLoad
}

// score orders group (in the key's rendezvous order) by the scored policy's cost (see
// Weights) and says why its first route is first: affinity when it holds the prefix or
// is the key's first home. A request let go by the fair queue goes to a route with a free
// slot: the full ones cost heldFull more.
func (s *Selector) score(group []index.Candidate, req Request, best bool, views []loadstat.View, tags []uint32, d *Decision) string {
	w := s.weights()
	sat := s.saturation()
	var cost [maxScored]float64
	var cached [maxScored]bool
	bonus := w.Affinity * min(1, float64(req.PrefixBytes)/FullAffinityBytes)
	var held [maxScored]float64 // the bonus of each route holding the prefix
	if req.HasKey && best {
		known := false
		for i := range group {
			cached[i] = s.sent.sentWithin(req.Key, tags[i], req.Now, s.warmFor())
			known = known || cached[i]
		}
		s.placeHomes(group, views, tags, cached[:len(group)], req.Key, req.Now)
		for i := range group {
			switch {
			case !cached[i]:
			case i < homes: // placeHomes put the homes first
				held[i] = s.holdBonus(bonus, group[i], views[i], req)
				if held[i] > bonus { // a home's share over a recent holder's, so a tenant drifts home
					held[i] += bonus * homeShare
				}
			case s.sent.sentWithin(req.Key, tags[i], req.Now, recentHold):
				held[i] = s.holdBonus(bonus, group[i], views[i], req)
			default:
				held[i] = bonus
			}
		}
		// A key no node has placed (that this node knows of) is taken to be held by its
		// first home, so that every node sends a new tenant to the same replica rather
		// than each to whichever of the two homes is less loaded at that instant.
		if !known {
			cached[0], held[0] = true, bonus
		}
	}
	var turns [maxScored]float64
	inTurns := req.Heavy && req.Turns && s.turnSlots(group, views, req.Now, turns[:len(group)])
	for i, v := range views {
		cost[i] = w.Load*v.Load() + w.Queue*waitsBehind(v) + w.KV*kvHigh(v.KV)
		f := freeSlots(v, sat)
		if req.Held && f <= 0 {
			cost[i] += heldFull
		}
		if req.Heavy && f > 0 && (inTurns && turns[i] < 1 || !inTurns && f < 2 && keepsLast(v)) {
			// The last free slot is the others' (or, taking turns, the slots beyond it
			// are other nodes' turns): it waits behind one.
			cost[i] += w.Queue
		}
		if cached[i] {
			cost[i] -= held[i]
		}
	}
	if req.HasKey && best {
		for i := range min(homes, len(group)) {
			if !cached[i] {
				cost[i] -= bonus * homeShare
			}
		}
	}
	idx := [maxScored]int{}
	for i := range group {
		idx[i] = i
	}
	sortBy(group, cost[:len(group)], false, idx[:len(group)])
	if req.HasKey && best {
		s.sent.mark(req.Key, tags[idx[0]], req.Now)
		d.Warm, d.HasWarm = s.toWarm(group, idx[:len(group)], cached[:len(group)], views, req, tags)
	}
	if cached[idx[0]] || req.HasKey && best && idx[0] == 0 {
		return ReasonAffinity
	}
	return ReasonLoad
}

// heldFull is what a route without a free slot adds to the cost of a request the fair
// queue let go (it was let go because a slot freed elsewhere).
const heldFull = 1000

// groupWeights appends to dst each route's weight in group for its key order: the
// route's weight (none below zero), or 1 for every route when all are zero.
func groupWeights(group []index.Candidate, dst []float64) []float64 {
	allZero := true
	for _, c := range group {
		allZero = allZero && c.Route.Weight <= 0
	}
	for _, c := range group {
		w := float64(max(0, c.Route.Weight))
		if allZero {
			w = 1
		}
		dst = append(dst, w)
	}
	return dst
}

// sortBy sorts group by keys (descending when desc), stably, by insertion (groups are
// small), keeping keys and idx (when not nil) in step; it reports whether the first
// element changed.
func sortBy(group []index.Candidate, keys []float64, desc bool, idx []int) bool {
	moved := false
	for i := 1; i < len(group); i++ {
		for j := i; j > 0; j-- {
			a, b := keys[j-1], keys[j]
			if desc && a >= b || !desc && a <= b {
				break
			}
			keys[j-1], keys[j] = b, a
			group[j-1], group[j] = group[j], group[j-1]
			if idx != nil {
				idx[j-1], idx[j] = idx[j], idx[j-1]
			}
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
// MaxKeyBytes). tenant is the account whose requests alone share the key (a model with
// account cache isolation), or empty when every account's do. ok is false when there is
// neither key nor prefix.
func PrefixKey(model, tenant string, cacheKey, prefix []byte) (key uint64, ok bool) {
	var d xxhash.Digest
	d.Reset()
	d.WriteString(model)
	d.Write([]byte{0})
	if tenant != "" {
		d.WriteString(tenant)
		d.Write([]byte{0})
	}
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
