package node

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/sekgate/gateway/dataplane/discovery"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/snapshot"
)

// discoveryOptions are the settings of routes discovered from DNS (docs/routing.md): how
// often their names are resolved again, through which server, and how long an empty
// answer keeps a route's last replicas.
type discoveryOptions struct {
	Interval   time.Duration `flag:"discovery-interval" default:"5s" help:"how often the DNS names of discovered routes are resolved again"`
	Server     string        `flag:"discovery-dns-server" help:"host:port of the DNS server discovered routes are resolved with (empty: the system's resolver)"`
	EmptyGrace time.Duration `flag:"discovery-empty-grace" default:"30s" help:"how long an empty DNS answer keeps a discovered route's last replicas (0: none)"`
}

func (o *discoveryOptions) validate() error {
	switch {
	case o.Interval < 100*time.Millisecond:
		return errors.New("--discovery-interval must be at least 100ms")
	case o.EmptyGrace < 0:
		return errors.New("--discovery-empty-grace must not be negative")
	}
	if o.Server != "" {
		if _, _, err := net.SplitHostPort(o.Server); err != nil {
			return fmt.Errorf("--discovery-dns-server must be host:port: %w", err)
		}
	}
	return nil
}

// openDiscovery makes the resolver of the discovered routes; the snapshot sync builds
// its indexes with the replicas it last found.
func (n *node) openDiscovery() error {
	o := n.o.Discovery
	grace := o.EmptyGrace
	if grace == 0 {
		grace = -1 // discovery.Config's 0 is its default
	}
	salt := index.SaltKey(n.o.NodeToken.Reveal())
	n.discovery = discovery.New(discovery.Config{
		Store: n.store,
		Build: func(s *snapshot.Snapshot, rep index.Replicas) (*index.Index, error) {
			return index.BuildReplicas(s, salt, rep)
		},
		Resolver: discovery.NewResolver(o.Server), Interval: o.Interval, EmptyGrace: grace, Logger: n.log,
		OnInstall: func(*index.Index) { n.retainReplicas() },
	})
	return nil
}

// retainReplicas forgets the breakers and load state of the replicas the current index
// no longer serves: a replica gone from DNS is no longer reported, nor read for its load.
func (n *node) retainReplicas() {
	x := n.store.Load()
	if x == nil {
		return
	}
	live := make(map[[2]string]bool, len(x.Served()))
	for _, r := range x.Served() {
		live[[2]string{r.ID, r.BaseURL}] = true
	}
	keep := func(id, baseURL string) bool { return live[[2]string{id, baseURL}] }
	if h := n.health.h.Load(); h != nil {
		h.Retain(keep)
	}
	if n.loads != nil {
		n.loads.Retain(keep)
	}
}
