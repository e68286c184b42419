package benchrouting

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/sekgate/gateway/deploy/tools/bareproxy"
)

// replicaHeader names the replica a client-side policy chose when its request passes the
// balancer and a pass-through node (passThrough) rather than going straight to it.
const replicaHeader = "X-Bench-Replica"

// passThrough is the hops a gateway policy's request takes, without the gateway: per
// node, a bare reverse proxy (deploy/tools/bareproxy: no auth, routing or metering) in
// front of each replica, so a client-side policy's request reaches the replica it chose
// through as many proxies as a gateway policy's does through the balancer and a node. Its
// tables then compare where requests go, not how many hops they take; what a node adds
// over a bare proxy is make bench's figure.
type passThrough struct {
	// urls[i][k] is node i's proxy in front of replica k (a base URL ending in /v1).
	urls    [][]*url.URL
	proxies []*bareproxy.Proxy
}

// startPassThrough starts nodes sets of proxies, one in front of each replica (base URLs
// ending in /v1).
func startPassThrough(nodes int, replicas []string) (*passThrough, error) {
	var ups []*url.URL
	for _, base := range replicas {
		u, err := url.Parse(base)
		if err != nil {
			return nil, fmt.Errorf("pass-through: replica %q: %w", base, err)
		}
		ups = append(ups, u)
	}
	pt := &passThrough{}
	for range max(1, nodes) {
		var row []*url.URL
		for _, u := range ups {
			p, err := bareproxy.New(bareproxy.Config{Upstream: u.Host})
			if err != nil {
				pt.close()
				return nil, fmt.Errorf("pass-through: %w", err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				pt.close()
				return nil, fmt.Errorf("pass-through: %w", err)
			}
			go p.Serve(ln)
			pt.proxies = append(pt.proxies, p)
			row = append(row, &url.URL{Scheme: "http", Host: ln.Addr().String(), Path: u.Path})
		}
		pt.urls = append(pt.urls, row)
	}
	return pt, nil
}

// nodeURLs is each node's first proxy, for the balancer's list of nodes.
func (pt *passThrough) nodeURLs() []string {
	var out []string
	for _, row := range pt.urls {
		out = append(out, row[0].String())
	}
	return out
}

// to is where node i sends a request for replica k (named by replicaHeader's value h;
// nil when h names none).
func (pt *passThrough) to(i int, h string) *url.URL {
	k, err := strconv.Atoi(h)
	if err != nil || i < 0 || i >= len(pt.urls) || k < 0 || k >= len(pt.urls[i]) {
		return nil
	}
	return pt.urls[i][k]
}

func (pt *passThrough) close() {
	if pt == nil {
		return
	}
	for _, p := range pt.proxies {
		p.Shutdown(context.Background())
	}
}
