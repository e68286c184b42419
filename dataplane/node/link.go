package node

import (
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/sekgate/gateway/internal/flagenv"
	"github.com/sekgate/gateway/internal/tlsfiles"
	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/snapshot"
)

// linkOptions are the settings of the link to the control plane: snapshot signatures,
// the disk snapshot's maximum age, TLS and the node token file.
type linkOptions struct {
	PublicKeyFile    string        `flag:"snapshot-public-key-file" help:"the control plane's ed25519 snapshot public key (PEM or 32 bytes hex/base64)"`
	InsecureUnsigned bool          `flag:"insecure-unsigned-snapshots" help:"accept snapshots without verifying their signature (insecure)"`
	MaxAge           time.Duration `flag:"snapshot-max-age" default:"24h" help:"oldest disk snapshot served while the control plane has not answered (0: no limit)"`
	NodeTokenFile    string        `flag:"node-token-file" help:"file holding this node's token (instead of --node-token)"`
	CAFile           string        `flag:"control-plane-ca-file" help:"PEM CA bundle that signed the control plane's certificate (default: the system roots)"`
	CertFile         string        `flag:"tls-client-cert-file" help:"PEM client certificate of this node for mTLS (re-read when it changes)"`
	KeyFile          string        `flag:"tls-client-key-file" help:"PEM private key of --tls-client-cert-file"`
	InsecureCP       bool          `flag:"insecure-control-plane" help:"allow a plain-http control plane URL off loopback (tokens in clear)"`
}

// validate checks the options and reads the node token file into o.
func (l *linkOptions) validate(o *Config) error {
	if l.NodeTokenFile != "" {
		if o.NodeToken.Reveal() != "" {
			return errors.New("give --node-token or --node-token-file, not both")
		}
		b, err := os.ReadFile(l.NodeTokenFile)
		if err != nil {
			return fmt.Errorf("node token: %w", err)
		}
		o.NodeToken = flagenv.NewSecret(strings.TrimSpace(string(b)))
	}
	tok := o.NodeToken.Reveal()
	if tok == "" {
		return errors.New("--node-token-file or --node-token (GATEWAY_NODE_TOKEN) is required")
	}
	if len(tok) < internalapi.MinTokenBytes || strings.ContainsFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return fmt.Errorf("the node token must be at least %d bytes without white space or control characters", internalapi.MinTokenBytes)
	}
	if err := tlsfiles.CheckControlPlaneURL(o.ControlPlaneURL, l.InsecureCP); err != nil {
		return err
	}
	switch {
	case (l.CertFile == "") != (l.KeyFile == ""):
		return errors.New("--tls-client-cert-file and --tls-client-key-file go together")
	case l.PublicKeyFile == "" && !l.InsecureUnsigned:
		return errors.New("--snapshot-public-key-file (GATEWAY_SNAPSHOT_PUBLIC_KEY_FILE) is required (or --insecure-unsigned-snapshots)")
	case l.MaxAge < 0:
		return errors.New("--snapshot-max-age must not be negative")
	}
	return nil
}

// publicKey reads the snapshot public key; nil when unsigned snapshots are allowed and no
// key was given.
func (l *linkOptions) publicKey() (ed25519.PublicKey, error) {
	if l.PublicKeyFile == "" {
		return nil, nil
	}
	return snapshot.ReadPublicKeyFile(l.PublicKeyFile)
}

// clientTLS is the node's one TLS configuration for the control plane (snapshot sync,
// usage batches, balance watch and forwarded paths).
func (l *linkOptions) clientTLS(log *slog.Logger) (*tls.Config, error) {
	return tlsfiles.ClientConfig(l.CAFile, l.CertFile, l.KeyFile, log)
}

// cpTransport is the HTTP transport of the node's net/http clients to the control plane.
func cpTransport(tc *tls.Config) *http.Transport {
	return &http.Transport{
		Proxy:                 nil, // the control plane is reached directly
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       tc,
		TLSHandshakeTimeout:   10 * time.Second,
		MaxIdleConns:          16,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     true,
	}
}

// syncMaxAge maps the flag (0: no limit) to syncclient.Config.MaxAge (negative: no limit).
func (l *linkOptions) syncMaxAge() time.Duration {
	if l.MaxAge == 0 {
		return -1
	}
	return l.MaxAge
}
