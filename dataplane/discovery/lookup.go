package discovery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Resolver looks names up; *net.Resolver is one (NewResolver).
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
	LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error)
}

// NewResolver returns the resolver of the node: the system's when server is empty, else
// Go's own asking only server (host:port) over UDP, and TCP for long answers.
func NewResolver(server string) *net.Resolver {
	if server == "" {
		return net.DefaultResolver
	}
	var d net.Dialer
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, server)
	}}
}

// MaxReplicas bounds the replicas of one route (the first by address are kept).
const MaxReplicas = 256

// errEmpty: the name exists but has no records, or does not exist (NXDOMAIN): no replica
// is ready, which is not the same as DNS failing.
var errEmpty = errors.New("no records")

// lookup resolves discovered route r's replicas, sorted by address; errEmpty when DNS
// answered with none.
func lookup(ctx context.Context, res Resolver, r *snapshot.Route) ([]index.Replica, error) {
	u, err := url.Parse(r.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("base_url: %w", err)
	}
	var reps []index.Replica
	switch r.Discovery {
	case snapshot.DiscoveryDNS:
		port := u.Port()
		if port == "" {
			port = "80"
			if u.Scheme == "https" {
				port = "443"
			}
		}
		reps, err = lookupHost(ctx, res, u.Hostname(), port, u.Host)
	case snapshot.DiscoveryDNSSRV:
		reps, err = lookupSRV(ctx, res, u.Hostname())
	default:
		return nil, fmt.Errorf("unknown discovery %q", r.Discovery)
	}
	if err != nil {
		return nil, err
	}
	if len(reps) == 0 {
		return nil, errEmpty
	}
	slices.SortFunc(reps, func(a, b index.Replica) int { return strings.Compare(a.Addr, b.Addr) })
	reps = slices.CompactFunc(reps, func(a, b index.Replica) bool { return a.Addr == b.Addr })
	if len(reps) > MaxReplicas {
		reps = reps[:MaxReplicas]
	}
	return reps, nil
}

// lookupHost returns one replica per address of name, at port, found under host.
func lookupHost(ctx context.Context, res Resolver, name, port, host string) ([]index.Replica, error) {
	ips, err := res.LookupIPAddr(ctx, name)
	if notFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up %s: %w", name, err)
	}
	out := make([]index.Replica, 0, len(ips))
	for _, ip := range ips {
		if ip.Zone != "" || ip.IP.IsUnspecified() {
			continue // a link-local address of one interface, or nowhere
		}
		out = append(out, index.Replica{Addr: net.JoinHostPort(ip.IP.String(), port), Host: host})
	}
	return out, nil
}

// lookupSRV returns one replica per address of each target of name's SRV records, at
// the record's port.
func lookupSRV(ctx context.Context, res Resolver, name string) ([]index.Replica, error) {
	_, srvs, err := res.LookupSRV(ctx, "", "", name)
	if notFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up SRV %s: %w", name, err)
	}
	var out []index.Replica
	for _, s := range srvs {
		target := strings.TrimSuffix(s.Target, ".")
		port := fmt.Sprint(s.Port)
		if target == "" || s.Port == 0 {
			continue // "." : the service is decidedly not available here
		}
		host := net.JoinHostPort(target, port)
		reps, err := lookupHost(ctx, res, target, port, host)
		if err != nil {
			return nil, err
		}
		out = append(out, reps...)
	}
	return out, nil
}

// notFound reports whether err says the name has no records (NXDOMAIN or no data).
func notFound(err error) bool {
	var dnsErr *net.DNSError
	return errors.As(err, &dnsErr) && dnsErr.IsNotFound
}
