package server

import (
	"bytes"
	"io"
	"net/http"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/admit"
	"github.com/sekgate/gateway/shared/internalapi"
)

// relayedHeaders are the control plane's response headers passed to the client.
var relayedHeaders = []string{"Content-Type", "Location", "Allow", "Retry-After"}

// hopHeaders are never forwarded.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade", "Te", "Trailer",
	"Authorization", "X-Api-Key", "Host", "Content-Length",
	internalapi.HeaderAccountID, internalapi.HeaderKeyID, internalapi.HeaderNodeID, internalapi.HeaderRequestID, "X-Forwarded-For"}

// forwardAuthed forwards an account path (/v1/service/*) after authenticating the key; the
// control plane receives the identity in internal headers next to the node token.
func (s *Server) forwardAuthed(ctx *fasthttp.RequestCtx) {
	p, aerr := s.admit.Authenticate(ctx, false, false)
	if aerr != nil {
		writeError(ctx, aerr)
		return
	}
	s.forwardCP(ctx, p.Acct.ID, p.Key.ID)
}

// forwardAccount forwards GET /v1/service/account like forwardAuthed, except that a
// suspended account is let through: its holder can still read its balance and why it is
// suspended (inference stays refused).
func (s *Server) forwardAccount(ctx *fasthttp.RequestCtx) {
	p, aerr := s.admit.Authenticate(ctx, false, false)
	if aerr == admit.ErrSuspended {
		aerr = s.admit.Residency(p)
	}
	if aerr != nil {
		writeError(ctx, aerr)
		return
	}
	s.forwardCP(ctx, p.Acct.ID, p.Key.ID)
}

// forwardPublic forwards signup and payment webhooks without a key: raw body and headers.
func (s *Server) forwardPublic(ctx *fasthttp.RequestCtx) { s.forwardCP(ctx, "", "") }

// maxForwardReply bounds a control-plane answer relayed to the client.
const maxForwardReply = 8 << 20

// forwardCP passes the request to the control plane over the node's link (Config.Link:
// its address, TLS and node credentials) and relays the answer; redirects (the signup
// form's 303) are relayed, not followed.
func (s *Server) forwardCP(ctx *fasthttp.RequestCtx, accountID, keyID string) {
	if s.cp == nil {
		writeError(ctx, errControlPlane)
		return
	}
	body, ok := s.readBody(ctx, maxForwardBody, errTooLargeForward, nil)
	if !ok {
		return
	}
	req, err := http.NewRequest(string(ctx.Method()), s.cfg.Link.URL(string(ctx.Request.Header.RequestURI())), bytes.NewReader(body))
	if err != nil {
		writeError(ctx, errBadRequest)
		return
	}
	ctx.Request.Header.VisitAll(func(k, v []byte) { req.Header.Add(string(k), string(v)) })
	for _, h := range hopHeaders {
		req.Header.Del(h)
	}
	s.cfg.Link.Authorize(req.Header)
	req.Header.Set(internalapi.HeaderRequestID, string(ctx.Response.Header.Peek("X-Request-Id")))
	if accountID != "" {
		req.Header.Set(internalapi.HeaderAccountID, accountID)
		req.Header.Set(internalapi.HeaderKeyID, keyID)
	}
	if a, ok := s.clientAddr(ctx); ok {
		req.Header.Set("X-Forwarded-For", a.String())
	}
	resp, err := s.cp.Do(req)
	var reply []byte
	if err == nil {
		reply, err = io.ReadAll(io.LimitReader(resp.Body, maxForwardReply))
		resp.Body.Close()
	}
	if err != nil {
		s.log.Warn("forward to control plane failed", "path", string(ctx.Path()), "err", err)
		writeError(ctx, errControlPlane)
		return
	}
	ctx.SetStatusCode(resp.StatusCode)
	for _, h := range relayedHeaders {
		if v := resp.Header.Get(h); v != "" {
			ctx.Response.Header.Set(h, v)
		}
	}
	ctx.SetBody(reply)
}
