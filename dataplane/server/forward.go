package server

import (
	"errors"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/admit"
	"github.com/sekgate/gateway/dataplane/cplink"
)

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
	f := cplink.Forward{Method: string(ctx.Method()), RequestURI: string(ctx.Request.Header.RequestURI()),
		Header: ctx.Request.Header.VisitAll, Body: body, RequestID: string(ctx.Response.Header.Peek("X-Request-Id")),
		AccountID: accountID, KeyID: keyID}
	if a, ok := s.cfg.TrustedProxies.Client(ctx.RemoteAddr(), ctx.Request.Header.PeekAll("X-Forwarded-For")); ok {
		f.ClientAddr = a.String()
	}
	reply, err := s.cfg.Link.Forward(s.cp, f)
	if errors.Is(err, cplink.ErrRequest) {
		writeError(ctx, errBadRequest)
		return
	}
	if err != nil {
		s.log.Warn("forward to control plane failed", "path", string(ctx.Path()), "err", err)
		writeError(ctx, errControlPlane)
		return
	}
	ctx.SetStatusCode(reply.Status)
	for h := range reply.Header {
		ctx.Response.Header.Set(h, reply.Header.Get(h))
	}
	ctx.SetBody(reply.Body)
}
