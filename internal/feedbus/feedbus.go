// Package feedbus runs the NATS server a fleet's data-plane nodes share their requests'
// starts on (dataplane/startfeed), in the control plane's process (--start-feed-listen):
// a fleet then needs no other service for it. An operator who runs NATS already points
// the nodes' --start-feed-url at that instead. The server keeps nothing: the feed's
// messages are plain publishes, lost when no node listens, and a node that loses the
// server splits the model servers' reports with the other nodes as without a feed.
package feedbus

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is a running NATS server.
type Server struct {
	ns *server.Server
}

// Start runs a NATS server on addr (host:port; port 0 picks one) and waits until it takes
// connections. Only the core protocol is on: no JetStream, no cluster, no monitoring port.
func Start(addr string, log *slog.Logger) (*Server, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("start feed listen %q: %w", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return nil, fmt.Errorf("start feed listen %q: not a port number", addr)
	}
	if p == 0 {
		p = server.RANDOM_PORT
	}
	ns, err := server.NewServer(&server.Options{Host: host, Port: p, NoSigs: true, NoLog: true,
		MaxPayload: 1 << 10, ServerName: "sekgate-start-feed"})
	if err != nil {
		return nil, fmt.Errorf("start feed server: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("start feed server on %s: not ready after 10s", addr)
	}
	if log != nil {
		log.Info("start feed listening", "url", ns.ClientURL())
	}
	return &Server{ns: ns}, nil
}

// URL is where the nodes connect (nats://host:port).
func (s *Server) URL() string { return s.ns.ClientURL() }

// Close stops the server.
func (s *Server) Close() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}
