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

// reloader holds a value read from files and reads it again, at most once per checkEvery,
// when any of the files changed. A failed re-read (a half-written pair: certificate
// replaced, key not yet) keeps the previous value, logs, and is retried at the next check.
type reloader[T any] struct {
	what  string // what the files hold, for log lines
	files []string
	read  func() (T, error)
	log   *slog.Logger
	now   func() time.Time

	mu      sync.Mutex
	v       T
	stamps  []stamp
	checked time.Time
}

// newReloader reads the value once (an error if it does not read).
func newReloader[T any](what string, files []string, read func() (T, error), log *slog.Logger) (*reloader[T], error) {
	if log == nil {
		log = slog.Default()
	}
	r := &reloader[T]{what: what, files: files, read: read, log: log, now: time.Now}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

// load stamps the files, then reads the value; on error nothing changes.
func (r *reloader[T]) load() error {
	stamps := make([]stamp, len(r.files))
	for i, f := range r.files {
		st, err := stat(f)
		if err != nil {
			return fmt.Errorf("tlsfiles: %w", err)
		}
		stamps[i] = st
	}
	v, err := r.read()
	if err != nil {
		return err
	}
	r.v, r.stamps = v, stamps
	return nil
}

// changed reports whether any file's stamp differs from the loaded one (an unreadable file
// counts as unchanged: the value in use stays).
func (r *reloader[T]) changed() bool {
	for i, f := range r.files {
		st, err := stat(f)
		if err != nil {
			return false
		}
		if st != r.stamps[i] {
			return true
		}
	}
	return false
}

// Current returns the value, re-reading the files when they changed since the last check.
func (r *reloader[T]) Current() T {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if now.Sub(r.checked) < checkEvery {
		return r.v
	}
	r.checked = now
	if !r.changed() {
		return r.v
	}
	if err := r.load(); err != nil {
		r.log.Warn(r.what+" changed on disk but does not load; keeping the previous one", "err", err)
		return r.v
	}
	r.log.Info(r.what+" reloaded", "files", r.files)
	return r.v
}

// newKeyPair reads a certificate and key, re-read when either changes.
func newKeyPair(certFile, keyFile string, log *slog.Logger) (*reloader[*tls.Certificate], error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("tlsfiles: certificate and key files are both required")
	}
	return newReloader("TLS certificate", []string{certFile, keyFile}, func() (*tls.Certificate, error) {
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("tlsfiles: load %s and %s: %w", certFile, keyFile, err)
		}
		return &c, nil
	}, log)
}

// newCAPool reads a PEM bundle of CA certificates (an error without at least one),
// re-read when it changes.
func newCAPool(file string, log *slog.Logger) (*reloader[*x509.CertPool], error) {
	return newReloader("CA bundle", []string{file}, func() (*x509.CertPool, error) {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("tlsfiles: %w", err)
		}
		p := x509.NewCertPool()
		if !p.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("tlsfiles: %s holds no PEM certificate", file)
		}
		return p, nil
	}, log)
}

// ServerConfig is the TLS configuration of a listener serving certFile/keyFile; with
// clientCAFile, clients must present a certificate signed by one of its CAs (mTLS). All
// three files are re-read when they change.
func ServerConfig(certFile, keyFile, clientCAFile string, log *slog.Logger) (*tls.Config, error) {
	kp, err := newKeyPair(certFile, keyFile, log)
	if err != nil {
		return nil, err
	}
	var cas *reloader[*x509.CertPool]
	if clientCAFile != "" {
		if cas, err = newCAPool(clientCAFile, log); err != nil {
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
		cas, err := newCAPool(caFile, log)
		if err != nil {
			return nil, err
		}
		c.RootCAs = cas.v
	}
	if certFile != "" {
		kp, err := newKeyPair(certFile, keyFile, log)
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
