package snapshot

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Values of Route.Discovery.
const (
	// DiscoveryDNS: the replicas are the A and AAAA records of the base URL's host, each
	// with the base URL's port (a Kubernetes headless Service: one record per ready pod).
	DiscoveryDNS = "dns"
	// DiscoveryDNSSRV: the replicas are the targets and ports of the SRV records the base
	// URL's host names, e.g. _http._tcp.vllm.ns.svc.cluster.local; the URL has no port.
	DiscoveryDNSSRV = "dns-srv"
)

// ReplicaSep separates a discovered route's ID from a replica's address in the replica's
// route ID: "<route>@<ip:port>".
const ReplicaSep = "@"

// ReplicaID is the route ID of the replica at addr (ip:port) of discovered route id.
func ReplicaID(id, addr string) string { return id + ReplicaSep + addr }

// SplitReplicaID splits a replica's route ID into the discovered route's ID and the
// replica's address; ok is false for an ID that names no replica. An address never holds
// ReplicaSep, so a route ID that does still splits right.
func SplitReplicaID(id string) (route, addr string, ok bool) {
	i := strings.LastIndex(id, ReplicaSep)
	if i <= 0 {
		return "", "", false
	}
	host, port, err := net.SplitHostPort(id[i+1:])
	if err != nil || net.ParseIP(host) == nil || port == "" {
		return "", "", false
	}
	return id[:i], id[i+1:], true
}

// CheckDiscovery checks a route's discovery against its base URL: empty (none), "dns" with
// a DNS name (not an IP address) as the host, or "dns-srv" with a DNS name and no port.
func CheckDiscovery(d, baseURL string) error {
	if d == "" {
		return nil
	}
	if d != DiscoveryDNS && d != DiscoveryDNSSRV {
		return fmt.Errorf("unknown discovery %q: want %s or %s (or none)", d, DiscoveryDNS, DiscoveryDNSSRV)
	}
	u, err := url.Parse(baseURL)
	if err != nil || u.Hostname() == "" {
		return errors.New("needs a base_url with a host to resolve")
	}
	host := u.Hostname()
	switch {
	case net.ParseIP(host) != nil:
		return fmt.Errorf("base_url host %s is an IP address: discovery needs a DNS name", host)
	case len(host) > 253 || strings.Contains(host, ".."):
		return fmt.Errorf("base_url host %q is not a DNS name", host)
	case d == DiscoveryDNSSRV && u.Port() != "":
		return fmt.Errorf("base_url %q: dns-srv takes each replica's port from its SRV record; leave the port out", baseURL)
	}
	return nil
}
