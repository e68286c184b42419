// Package dnstest runs a small authoritative DNS server on loopback for tests
// (github.com/miekg/dns): A, AAAA and SRV records set and changed by the test, NXDOMAIN
// for names it has none for, and SERVFAIL on demand.
package dnstest

import (
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/miekg/dns"
)

// SRV is one SRV record's target and port.
type SRV struct {
	Target string
	Port   uint16
}

// Server is a running DNS server; Addr is its UDP address (host:port).
type Server struct {
	Addr string
	// Queries counts the questions answered.
	Queries atomic.Int64

	mu      sync.Mutex
	ips     map[string][]net.IP
	srvs    map[string][]SRV
	failing bool
}

// Start starts a server on a free UDP port of 127.0.0.1, stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: pc.LocalAddr().String(), ips: map[string][]net.IP{}, srvs: map[string][]SRV{}}
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(s.serve), NotifyStartedFunc: func() { close(started) }}
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	return s
}

// SetA makes name's A and AAAA records ips (none: the name does not exist).
func (s *Server) SetA(name string, ips ...string) {
	l := make([]net.IP, 0, len(ips))
	for _, ip := range ips {
		l = append(l, net.ParseIP(ip))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(l) == 0 {
		delete(s.ips, dns.Fqdn(strings.ToLower(name)))
		return
	}
	s.ips[dns.Fqdn(strings.ToLower(name))] = l
}

// SetSRV makes name's SRV records recs (none: the name does not exist).
func (s *Server) SetSRV(name string, recs ...SRV) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(recs) == 0 {
		delete(s.srvs, dns.Fqdn(strings.ToLower(name)))
		return
	}
	s.srvs[dns.Fqdn(strings.ToLower(name))] = recs
}

// SetFailing makes every answer SERVFAIL (true) or normal again (false).
func (s *Server) SetFailing(f bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing = f
}

func (s *Server) serve(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failing {
		m.Rcode = dns.RcodeServerFailure
		_ = w.WriteMsg(m)
		return
	}
	for _, q := range req.Question {
		s.Queries.Add(1)
		name := strings.ToLower(q.Name)
		ips, srvs := s.ips[name], s.srvs[name]
		if ips == nil && srvs == nil {
			m.Rcode = dns.RcodeNameError
			continue
		}
		hdr := dns.RR_Header{Name: q.Name, Class: dns.ClassINET, Ttl: 1, Rrtype: q.Qtype}
		switch q.Qtype {
		case dns.TypeA, dns.TypeAAAA:
			for _, ip := range ips {
				if v4 := ip.To4(); v4 != nil && q.Qtype == dns.TypeA {
					m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: v4})
				} else if v4 == nil && q.Qtype == dns.TypeAAAA {
					m.Answer = append(m.Answer, &dns.AAAA{Hdr: hdr, AAAA: ip})
				}
			}
		case dns.TypeSRV:
			for _, r := range srvs {
				m.Answer = append(m.Answer, &dns.SRV{Hdr: hdr, Priority: 0, Weight: 1, Port: r.Port, Target: dns.Fqdn(r.Target)})
			}
		}
	}
	_ = w.WriteMsg(m)
}
