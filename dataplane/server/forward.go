package server

import (
	"time"

	"github.com/valyala/fasthttp"

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
	p, aerr := s.authenticate(ctx, false, false)
	if aerr != nil {
		writeError(ctx, aerr)
		return
	}
	s.forwardCP(ctx, p.acct.ID, p.key.ID)
}

// forwardPublic forwards signup and payment webhooks without a key: raw body and headers.
func (s *Server) forwardPublic(ctx *fasthttp.RequestCtx) { s.forwardCP(ctx, "", "") }

func (s *Server) forwardCP(ctx *fasthttp.RequestCtx, accountID, keyID string) {
	if s.cp == nil {
		writeError(ctx, errControlPlane)
		return
	}
	body, ok := s.readBody(ctx, maxForwardBody, errTooLargeForward)
	if !ok {
		return
	}
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)

	ctx.Request.Header.CopyTo(&req.Header)
	for _, h := range hopHeaders {
		req.Header.Del(h)
	}
	req.SetRequestURIBytes(ctx.Request.Header.RequestURI())
	req.URI().DisablePathNormalizing = true
	if s.cp.IsTLS {
		req.URI().SetScheme("https") // the URI is path-only: without this fasthttp assumes http
	}
	req.Header.SetHost(s.cpHost)
	req.UseHostHeader = true
	req.Header.Set("Authorization", "Bearer "+s.cfg.NodeToken)
	if s.cfg.NodeID != "" {
		req.Header.Set(internalapi.HeaderNodeID, s.cfg.NodeID)
	}
	req.Header.SetBytesV(internalapi.HeaderRequestID, ctx.Response.Header.Peek("X-Request-Id"))
	if accountID != "" {
		req.Header.Set(internalapi.HeaderAccountID, accountID)
		req.Header.Set(internalapi.HeaderKeyID, keyID)
	}
	if a, ok := s.clientAddr(ctx); ok {
		req.Header.Set("X-Forwarded-For", a.String())
	}
	req.SetBodyRaw(body)

	if err := s.cp.DoTimeout(req, resp, 30*time.Second); err != nil {
		s.log.Warn("forward to control plane failed", "path", string(ctx.Path()), "err", err)
		writeError(ctx, errControlPlane)
		return
	}
	ctx.SetStatusCode(resp.StatusCode())
	for _, h := range relayedHeaders {
		if v := resp.Header.Peek(h); len(v) > 0 {
			ctx.Response.Header.SetBytesV(h, v)
		}
	}
	ctx.SetBody(resp.Body())
}
