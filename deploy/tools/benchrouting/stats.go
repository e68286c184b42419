package benchrouting

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sekgate/gateway/internal/simulator"
)

// ReplicaStat is one replica's share of a run (warm-up included): requests finished, its
// prefix-cache hit rate (tokens), and its waiting queue sampled every 50 ms.
type ReplicaStat struct {
	Requests int64
	// Streams are the workload's requests the replica received (every one streams), and
	// Copies the nodes' warm-up copies (unstreamed), both counted as they arrive.
	Streams, Copies int64 `json:",omitempty"`
	HitRate         float64
	MeanWaiting     float64
	PeakWaiting     int
}

// NodeStat is one node's share of a run: requests the balancer sent it, and its fair
// queue's waits (requests let go after waiting, their mean wait) and refusals.
type NodeStat struct {
	Sent        int64
	Queued      uint64
	QueueWaitMS float64
	Refused     float64
}

// waitSampler samples the replicas' waiting queues until its context ends.
type waitSampler struct {
	mu      sync.Mutex
	n       int
	sum     []int
	peak    []int
	stopped chan struct{}
}

func sampleWaits(ctx context.Context, sims []*simulator.Server) *waitSampler {
	s := &waitSampler{sum: make([]int, len(sims)), peak: make([]int, len(sims)), stopped: make(chan struct{})}
	go func() {
		defer close(s.stopped)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			s.mu.Lock()
			s.n++
			for i, sim := range sims {
				w := sim.Engine().Waiting
				s.sum[i] += w
				s.peak[i] = max(s.peak[i], w)
			}
			s.mu.Unlock()
		}
	}()
	return s
}

// replicaStats returns each replica's figures so far.
func (st *stack) replicaStats() []ReplicaStat {
	st.waits.mu.Lock()
	defer st.waits.mu.Unlock()
	out := make([]ReplicaStat, len(st.sims))
	for i, sim := range st.sims {
		e := sim.Engine()
		ss := sim.Stats()
		out[i] = ReplicaStat{Requests: e.Done, Streams: ss.Streams, Copies: ss.Requests - ss.Streams, PeakWaiting: st.waits.peak[i]}
		if e.Queries > 0 {
			out[i].HitRate = float64(e.Hits) / float64(e.Queries)
		}
		if st.waits.n > 0 {
			out[i].MeanWaiting = float64(st.waits.sum[i]) / float64(st.waits.n)
		}
	}
	return out
}

// nodeStats returns each node's figures so far (none for client-side policies).
func (st *stack) nodeStats() []NodeStat {
	var sent []int64
	if st.lb != nil {
		sent = st.lb.perNode()
	}
	var out []NodeStat
	for i, n := range st.nodes {
		ns := fairQueueStat(n.fq.Collectors())
		if i < len(sent) {
			ns.Sent = sent[i]
		}
		out = append(out, ns)
	}
	return out
}

// fairQueueStat reads a fair queue's metrics: waits (count and mean) and refusals.
func fairQueueStat(cs []prometheus.Collector) NodeStat {
	reg := prometheus.NewRegistry()
	var ns NodeStat
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return ns
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		return ns
	}
	var sum float64
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if h := m.GetHistogram(); h != nil {
				ns.Queued += h.GetSampleCount()
				sum += h.GetSampleSum()
			}
			if c := m.GetCounter(); c != nil {
				ns.Refused += c.GetValue()
			}
		}
	}
	if ns.Queued > 0 {
		ns.QueueWaitMS = 1000 * sum / float64(ns.Queued)
	}
	return ns
}
