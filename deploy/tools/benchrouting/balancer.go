package benchrouting

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"time"
)

// balancer is the fleet's load balancer: an HTTP reverse proxy on loopback that sends each
// request to the next node in turn (round robin, blind to load and to the request), as a
// plain cloud load balancer in front of a deployment's nodes does. Streams are relayed
// event by event (every write is flushed).
type balancer struct {
	nodes []*url.URL
	// pt, when set, is the pass-through nodes: a request naming a replica (replicaHeader)
	// goes to the next node's proxy in front of it.
	pt   *passThrough
	next atomic.Uint64
	sent []atomic.Int64 // requests sent per node
	srv  *http.Server
	url  string // base URL, ending in /v1
}

var balancerTransport = &http.Transport{MaxIdleConnsPerHost: 512, IdleConnTimeout: 30 * time.Second}

// startBalancer listens on addr (loopback, port 0 for any) in front of the nodes' base
// URLs (each ending in /v1).
func startBalancer(addr string, nodes []string, pt *passThrough) (*balancer, error) {
	if len(nodes) == 0 {
		return nil, errors.New("balancer: no nodes")
	}
	b := &balancer{sent: make([]atomic.Int64, len(nodes)), pt: pt}
	for _, n := range nodes {
		u, err := url.Parse(n)
		if err != nil {
			return nil, fmt.Errorf("balancer: node %q: %w", n, err)
		}
		b.nodes = append(b.nodes, u)
	}
	rp := &httputil.ReverseProxy{Rewrite: b.rewrite, Transport: balancerTransport, FlushInterval: -1}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("balancer: %w", err)
	}
	b.srv = &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	go b.srv.Serve(ln)
	b.url = "http://" + ln.Addr().String() + "/v1"
	return b, nil
}

// rewrite points the request at the next node; the path is kept as sent.
func (b *balancer) rewrite(r *httputil.ProxyRequest) {
	i := int((b.next.Add(1) - 1) % uint64(len(b.nodes)))
	b.sent[i].Add(1)
	n := b.nodes[i]
	if b.pt != nil {
		if u := b.pt.to(i, r.In.Header.Get(replicaHeader)); u != nil {
			n = u
		}
	}
	r.Out.URL.Scheme, r.Out.URL.Host = n.Scheme, n.Host
	r.Out.Host = n.Host
	r.SetXForwarded()
}

// perNode returns how many requests each node was sent.
func (b *balancer) perNode() []int64 {
	out := make([]int64, len(b.sent))
	for i := range b.sent {
		out[i] = b.sent[i].Load()
	}
	return out
}

func (b *balancer) close() {
	if b != nil && b.srv != nil {
		b.srv.Close()
	}
}
