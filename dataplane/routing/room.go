package routing

import (
	"math"
	"time"

	"github.com/sekgate/gateway/dataplane/fairq"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/loadstat"
	"github.com/sekgate/gateway/internal/flagenv"
)

// Saturation is when a route counts as full: its server's estimated waiting queue
// (loadstat.View.Excess, negative while slots are free) is at least Queue once its
// capacity is known (else its reported waiting queue is at least max(Queue, 1)), or its
// KV-cache use is at least KV, by a report at least half fresh.
type Saturation struct {
	Queue float64 `flag:"saturation-queue" help:"a route is full when its server's estimated waiting queue reaches this"`
	KV    float64 `flag:"saturation-kv" default:"0.95" help:"a route is full when its server's KV-cache use reaches this share (0 to 1)"`
}

// DefaultSaturation: no slot is free (Queue 0), or the KV cache is 95 % full. Held at the
// node, requests go in turns the moment a slot frees; in the servers' own queues they
// would go first come, first served.
var DefaultSaturation = func() Saturation {
	var s Saturation
	flagenv.MustDefaults(&s) // the fields' default tags
	return s
}()

func (s *Selector) saturation() *Saturation {
	if s.Saturation != nil {
		return s.Saturation
	}
	return &DefaultSaturation
}

// freeSlots is how many more requests a route's server can start now by the view v: its
// free slots (plus Saturation.Queue) once its capacity is known, 0 when its KV cache is
// full; +Inf when its capacity is unknown and its queue is short, or without a report at
// least half fresh (the node then knows nothing that would hold a request back).
func freeSlots(v loadstat.View, sat *Saturation) float64 {
	if v.Fresh < 0.5 {
		return math.Inf(1)
	}
	if v.KV >= sat.KV*v.Fresh {
		return 0
	}
	if v.SlotsKnown() {
		return max(0, sat.Queue*v.Fresh-v.Excess)
	}
	if v.Waiting >= max(sat.Queue, 1)*v.Fresh {
		return 0
	}
	return math.Inf(1)
}

// Room is what the fair queue asks of a request's candidates (fairq.Space): how many more
// requests their servers can start now (Free, the sum of freeSlots; +Inf when any route's
// is), as many beyond each server's last free slot (Spare: what an account above its share
// may take), and the capacity known of them (the sum of their known slots). Without a load
// registry the room is unbounded.
//
// The free slots a server reports are seen by every node of the fleet at once, so a node
// counts its part of them (Nodes, n): a 1/n share of the slots the report showed free, less
// every request this node started there since (nodePart). The nodes' fair queues together
// then keep the headroom and reserves one node keeps alone, however many of them act on
// the same report, instead of each filling it. For the requests they hold, which every
// node lets go on the same reports, the space also says what the reports showed free
// (Reported, read at ReportedAt), this node's requests started since (Started), and its
// turns of the slots beyond each server's last (SpareTurns, turnSlots). A node that hears
// the other nodes' starts as they happen (Alone) takes the whole of what the reports
// showed free less every node's starts since, and takes no turns (Space.Split 1).
func (s *Selector) Room(cands []index.Candidate, now int64) fairq.Space {
	if s.Loads == nil || len(cands) == 0 {
		inf := math.Inf(1)
		return fairq.Space{Free: inf, Spare: inf, Reported: inf, SpareTurns: math.NaN()}
	}
	sat := s.saturation()
	n, _ := s.roomPlace()
	var sp fairq.Space
	var views [maxScored]loadstat.View
	var turns [maxScored]float64
	oldest := int64(math.MaxInt64)
	for len(cands) > 0 {
		group := firstGroup(cands)
		cands = cands[len(group):]
		for len(group) > 0 {
			part := group[:min(len(group), maxScored)]
			group = group[len(part):]
			for i, c := range part {
				views[i] = s.Loads.For(c.Route).View(now, s.Loads.FreshFor)
				if n > 1 {
					views[i] = unheard(views[i])
				}
			}
			inTurns := s.turnSlots(part, views[:len(part)], now, turns[:len(part)])
			for i, v := range views[:len(part)] {
				f := freeSlots(v, sat)
				sp.Free += nodePart(f, v.Moved, float64(n))
				sp.Spare += nodePart(f-lastSlot(v), v.Moved, float64(n))
				sp.Reported += freeSlots(asReported(v), sat)
				sp.Started += max(v.Moved, 0)
				sp.Capacity += v.Slots
				oldest = min(oldest, v.At)
				if inTurns {
					sp.SpareTurns += turns[i]
				} else {
					sp.SpareTurns = math.NaN()
				}
			}
		}
	}
	sp.ReportedAt = oldest
	sp.Split = float64(n)
	return sp
}

// place is the fleet's live nodes and this node's rank among them (1 and 0 alone).
func (s *Selector) place() (n, rank int) {
	if s.Place == nil {
		return 1, 0
	}
	n, rank = s.Place()
	if n = max(n, 1); n == 1 {
		rank = 0
	}
	return n, rank
}

// roomPlace is place for sharing the servers' free slots: alone (1, 0) while the node
// knows the other nodes' starts as they happen (Alone).
func (s *Selector) roomPlace() (n, rank int) {
	if s.Alone != nil && s.Alone() {
		return 1, 0
	}
	return s.place()
}

// turnSlots sets room[i] to this node's turns (fairq.Turn) of the slots beyond the last
// free one of group[i]'s server (group: at most maxScored routes) that the server's report
// (views[i]) showed, less the requests the node started there since, and reports whether
// it could: only in a fleet whose order the node knows, every server's capacity known.
// Every node numbers the slots alike, the first slot beyond the last of each server in the
// order of their IDs' hashes, then the second, and so on, so that N nodes acting on the
// same reports take different slots, spread over the servers, and together no more than
// one node alone would.
func (s *Selector) turnSlots(group []index.Candidate, views []loadstat.View, now int64, room []float64) bool {
	sat := s.saturation()
	n, rank := s.roomPlace()
	if n <= 1 || rank < 1 || len(group) == 0 {
		return false
	}
	var beyond [maxScored]int64
	for i, v := range views {
		if !v.SlotsKnown() || math.IsInf(freeSlots(v, sat), 1) {
			return false
		}
		beyond[i] = int64(math.Ceil(freeSlots(asReported(v), sat) - lastSlot(v)))
	}
	var byHash [maxScored]int
	var hash [maxScored]uint64
	for i, c := range group {
		byHash[i], hash[i] = i, s.idHash(c.Route)
		for k := i; k > 0 && hash[byHash[k]] < hash[byHash[k-1]]; k-- {
			byHash[k], byHash[k-1] = byHash[k-1], byHash[k]
		}
	}
	t := fairq.TurnAt(int64(n), int64(rank), time.Unix(0, now))
	var mine [maxScored]int64
	slot := int64(0)
	for j, more := int64(0), true; more; j++ {
		more = false
		for _, i := range byHash[:len(group)] {
			if beyond[i] > j {
				if t.Mine(slot, views[i].At) {
					mine[i]++
				}
				slot++
				more = true
			}
		}
	}
	for i, v := range views {
		room[i] = max(0, float64(mine[i])-max(v.Moved-v.Heard, 0)) // its own starts: the others take their own turns
	}
	return true
}

// lastSlot is the free slot of the route's server kept from accounts above their share:
// 1 when it has one to keep (keepsLast), else 0.
func lastSlot(v loadstat.View) float64 {
	if keepsLast(v) {
		return 1
	}
	return 0
}

// unheard is view v without the other nodes' starts and ends heard since the report
// (loadstat.View.Heard): a node that splits the report's free slots with the others
// counts only its own, as the others count theirs.
func unheard(v loadstat.View) loadstat.View {
	v.Excess -= v.Heard
	v.Moved -= v.Heard
	v.Queue = max(0, v.Excess)
	v.Heard = 0
	return v
}

// asReported is view v without this node's own requests started or ended since the
// server's report: the server as every node's report of the same moment shows it.
func asReported(v loadstat.View) loadstat.View {
	v.Excess -= v.Moved
	v.Queue = max(0, v.Excess)
	v.Moved, v.Heard = 0, 0
	return v
}

// keepsLast reports whether the route's last free slot is kept from accounts above their
// share: a server of two or more slots (one of a single slot would never serve them).
func keepsLast(v loadstat.View) bool { return v.Slots >= 2 }

// nodePart is a node's part of a route's free slots, free by this node's view (the
// report's free slots less moved, this node's own requests started less ended since the
// report), in a fleet of n nodes: (report's free)/n − moved. Requests this node ended
// since the report freed slots that any node may take: they count a 1/n share, like the
// report's.
func nodePart(free, moved, n float64) float64 {
	if math.IsInf(free, 1) {
		return free
	}
	return max(0, free-(n-1)*max(moved, 0)) / n
}
