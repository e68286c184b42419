package cplink

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/sekgate/gateway/shared/internalapi"
)

// relayedHeaders are the control plane's response headers passed to the client.
var relayedHeaders = []string{"Content-Type", "Location", "Allow", "Retry-After"}

// hopHeaders are never forwarded: hop-by-hop headers, the client's credentials, and the
// internal headers only the node may set.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade", "Te", "Trailer",
	"Authorization", "X-Api-Key", "Host", "Content-Length",
	internalapi.HeaderAccountID, internalapi.HeaderKeyID, internalapi.HeaderNodeID, internalapi.HeaderRequestID, "X-Forwarded-For"}

// ErrRequest: the client's request cannot be forwarded as it is (its client's error).
var ErrRequest = errors.New("cplink: request cannot be forwarded")

// maxForwardReply bounds a forwarded answer read from the control plane.
const maxForwardReply = 8 << 20

// Forward is a client's request to an account path (/v1/service/*, /v1/stripe/webhook)
// for the control plane.
type Forward struct {
	Method, RequestURI string
	// Header visits the client's request headers.
	Header func(visit func(k, v []byte))
	Body   []byte
	// RequestID is the gateway's ID of the request; AccountID and KeyID the authenticated
	// caller ("" on public paths); ClientAddr the client's address ("" when unknown).
	RequestID, AccountID, KeyID, ClientAddr string
}

// Reply is the control plane's answer to a forwarded request, with the headers that pass
// to the client.
type Reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// Forward sends f to the control plane over hc, with the node's credentials and the
// caller's identity in internal headers, and returns its answer.
func (c *Client) Forward(hc *http.Client, f Forward) (Reply, error) {
	req, err := http.NewRequest(f.Method, c.URL(f.RequestURI), bytes.NewReader(f.Body))
	if err != nil {
		return Reply{}, fmt.Errorf("%w %q: %w", ErrRequest, f.RequestURI, err)
	}
	f.Header(func(k, v []byte) { req.Header.Add(string(k), string(v)) })
	for _, h := range hopHeaders {
		req.Header.Del(h)
	}
	c.Authorize(req.Header)
	req.Header.Set(internalapi.HeaderRequestID, f.RequestID)
	if f.AccountID != "" {
		req.Header.Set(internalapi.HeaderAccountID, f.AccountID)
		req.Header.Set(internalapi.HeaderKeyID, f.KeyID)
	}
	if f.ClientAddr != "" {
		req.Header.Set("X-Forwarded-For", f.ClientAddr)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Reply{}, fmt.Errorf("cplink: forward %s: %w", f.RequestURI, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxForwardReply))
	if err != nil {
		return Reply{}, fmt.Errorf("cplink: forward %s: read the answer: %w", f.RequestURI, err)
	}
	r := Reply{Status: resp.StatusCode, Header: http.Header{}, Body: body}
	for _, h := range relayedHeaders {
		if v := resp.Header.Get(h); v != "" {
			r.Header.Set(h, v)
		}
	}
	return r, nil
}
