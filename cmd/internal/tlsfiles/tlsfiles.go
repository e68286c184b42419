// Package tlsfiles builds TLS configurations for the link between the planes from PEM
// files, re-reading them when they change on disk, so certificates can be rotated without a
// restart: the control plane's node-facing listener (optionally requiring client
// certificates) and the data plane's one client configuration for its control plane.
package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"sync"
	"time"
)

// checkEvery bounds how often the files are stat'ed (handshakes in between reuse the result).
const checkEvery = time.Second

// stamp identifies a file version.
type stamp struct {
	mod  time.Time
	size int64
}

func stat(p string) (stamp, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return stamp{}, err
	}
	return stamp{fi.ModTime(), fi.Size()}, nil
}

// KeyPair is a certificate and key read from files and re-read when either changes. A
// failed reload keeps the previous pair and logs.
type KeyPair struct {
	certFile, keyFile string
	log               *slog.Logger
	now               func() time.Time

	mu        sync.Mutex
	cert      *tls.Certificate
	certStamp stamp
	keyStamp  stamp
	checked   time.Time
}

// NewKeyPair loads the pair once (an error if it does not load).
func NewKeyPair(certFile, keyFile string, log *slog.Logger) (*KeyPair, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("tlsfiles: certificate and key files are both required")
	}
	if log == nil {
		log = slog.Default()
	}
	k := &KeyPair{certFile: certFile, keyFile: keyFile, log: log, now: time.Now}
	if err := k.load(); err != nil {
		return nil, err
	}
	return k, nil
}

func (k *KeyPair) load() error {
	cs, err := stat(k.certFile)
	if err != nil {
		return fmt.Errorf("tlsfiles: %w", err)
	}
	ks, err := stat(k.keyFile)
	if err != nil {
		return fmt.Errorf("tlsfiles: %w", err)
	}
	c, err := tls.LoadX509KeyPair(k.certFile, k.keyFile)
	if err != nil {
		return fmt.Errorf("tlsfiles: load %s and %s: %w", k.certFile, k.keyFile, err)
	}
	k.cert, k.certStamp, k.keyStamp = &c, cs, ks
	return nil
}

// Current returns the pair, re-reading the files when they changed since the last check.
func (k *KeyPair) Current() *tls.Certificate {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	if now.Sub(k.checked) < checkEvery {
		return k.cert
	}
	k.checked = now
	cs, err1 := stat(k.certFile)
	ks, err2 := stat(k.keyFile)
	if err1 != nil || err2 != nil || (cs == k.certStamp && ks == k.keyStamp) {
		return k.cert
	}
	prev := k.cert
	if err := k.load(); err != nil {
		// A half-written pair (cert replaced, key not yet) fails here; the next check retries.
		k.log.Warn("TLS certificate changed on disk but does not load; keeping the previous one", "err", err)
		k.cert = prev
		return prev
	}
	k.log.Info("TLS certificate reloaded", "cert", k.certFile)
	return k.cert
}

// CAPool is a PEM bundle of CA certificates re-read when it changes.
type CAPool struct {
	file string
	log  *slog.Logger

	mu      sync.Mutex
	pool    *x509.CertPool
	st      stamp
	checked time.Time
}

// NewCAPool loads the bundle once (an error without at least one certificate).
func NewCAPool(file string, log *slog.Logger) (*CAPool, error) {
	if log == nil {
		log = slog.Default()
	}
	c := &CAPool{file: file, log: log}
	if err := c.load(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *CAPool) load() error {
	st, err := stat(c.file)
	if err != nil {
		return fmt.Errorf("tlsfiles: %w", err)
	}
	b, err := os.ReadFile(c.file)
	if err != nil {
		return fmt.Errorf("tlsfiles: %w", err)
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(b) {
		return fmt.Errorf("tlsfiles: %s holds no PEM certificate", c.file)
	}
	c.pool, c.st = p, st
	return nil
}

// Current returns the pool, re-reading the file when it changed.
func (c *CAPool) Current() *x509.CertPool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if now.Sub(c.checked) < checkEvery {
		return c.pool
	}
	c.checked = now
	if st, err := stat(c.file); err != nil || st == c.st {
		return c.pool
	}
	prev := c.pool
	if err := c.load(); err != nil {
		c.log.Warn("CA bundle changed on disk but does not load; keeping the previous one", "err", err)
		c.pool = prev
	} else {
		c.log.Info("CA bundle reloaded", "file", c.file)
	}
	return c.pool
}

// ServerConfig is the TLS configuration of a listener serving certFile/keyFile; with
// clientCAFile, clients must present a certificate signed by one of its CAs (mTLS). All
// three files are re-read when they change.
func ServerConfig(certFile, keyFile, clientCAFile string, log *slog.Logger) (*tls.Config, error) {
	kp, err := NewKeyPair(certFile, keyFile, log)
	if err != nil {
		return nil, err
	}
	var cas *CAPool
	if clientCAFile != "" {
		if cas, err = NewCAPool(clientCAFile, log); err != nil {
			return nil, err
		}
	}
	base := &tls.Config{MinVersion: tls.VersionTLS12}
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		c := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*kp.Current()}}
		if cas != nil {
			c.ClientAuth = tls.RequireAndVerifyClientCert
			c.ClientCAs = cas.Current()
		}
		return c, nil
	}
	return base, nil
}

// ClientConfig is the data plane's one TLS configuration for its control plane: the CA
// bundle that signed the control plane's certificate (empty: the system roots; read at
// start) and, for mTLS, the node's certificate and key (re-read when they change).
func ClientConfig(caFile, certFile, keyFile string, log *slog.Logger) (*tls.Config, error) {
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("tlsfiles: a client certificate needs both its certificate and key files")
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		cas, err := NewCAPool(caFile, log)
		if err != nil {
			return nil, err
		}
		c.RootCAs = cas.pool
	}
	if certFile != "" {
		kp, err := NewKeyPair(certFile, keyFile, log)
		if err != nil {
			return nil, err
		}
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return kp.Current(), nil }
	}
	return c, nil
}

// CheckControlPlaneURL refuses a plain-http control plane URL on a non-loopback host unless
// insecure is set: bearer tokens, usage and snapshots would cross the network in clear.
func CheckControlPlaneURL(raw string, insecure bool) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("control plane URL %q is not an absolute URL", raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
	default:
		return fmt.Errorf("control plane URL %q: scheme must be https (or http on loopback)", raw)
	}
	if insecure || IsLoopback(u.Hostname()) {
		return nil
	}
	return fmt.Errorf("control plane URL %q is plain http on a non-loopback address: use https (with --control-plane-ca-file), or --insecure-control-plane", raw)
}

// IsLoopback reports whether host is "localhost" or a loopback IP address.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
