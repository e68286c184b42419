package server

import (
	"bytes"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/reqbody"
	"github.com/sekgate/gateway/shared/apierror"
)

// bodyBufs holds the buffers inference handlers read bodies into; a handler returns its
// buffer once nothing can refer to the body any more. (Reading a 64 KiB body into fresh
// buffers allocated 112 KiB per request, and the garbage collector's work for it was a
// fifth of the data plane's CPU.)
var bodyBufs reqbody.Pool

// readBody returns the request's body, at most limit bytes (tooLarge answers a longer
// one), read by s.body (reqbody.Reader.Read) into into when it is not nil; false once the
// client has its answer.
func (s *Server) readBody(ctx *fasthttp.RequestCtx, limit int, tooLarge *apierror.Error, into *[]byte) ([]byte, bool) {
	b, aerr := s.body.Read(ctx, limit, tooLarge, into)
	if aerr != nil {
		writeError(ctx, aerr)
		return nil, false
	}
	return b, true
}

// bodyLimit is the size limit of the body of a request to path.
func bodyLimit(path []byte) int {
	switch {
	case bytes.HasPrefix(path, systemOnePath):
		return maxSystemOneBody
	case bytes.HasPrefix(path, servicePath), bytes.HasPrefix(path, stripePath):
		return maxForwardBody
	}
	return MaxBodySize
}

// maxForwardBody is the limit on bodies forwarded to the control plane (signup, top-up,
// payment webhooks).
const maxForwardBody = 1 << 20

var (
	systemOnePath = []byte("/v1/systemone")
	servicePath   = []byte("/v1/service/")
	stripePath    = []byte("/v1/stripe/")
)

// keyedPosts are the POST paths that need an API key.
var keyedPosts = map[string]bool{
	"/v1/chat/completions": true, "/v1/completions": true, "/v1/embeddings": true, "/v1/responses": true,
	"/v1/messages": true, "/v1/messages/count_tokens": true, "/v1/systemone": true, "/v1/service/topup": true,
}

// expectContinue decides a request that sent Expect: 100-continue from its headers alone,
// before the client sends its body: bad framing, a declared length over the endpoint's
// limit and (on paths that need one) a missing or wrong key are answered at once and the
// connection closed; anything else gets 100 Continue.
func (s *Server) expectContinue(ctx *fasthttp.RequestCtx) int {
	path := ctx.Request.URI().PathOriginal()
	var aerr *apierror.Error
	switch limit := bodyLimit(path); {
	case reqbody.BadFraming(ctx.Request.Header.RawHeaders()):
		aerr = errFraming
	case ctx.Request.Header.ContentLength() > limit:
		aerr = tooLargeFor(limit)
	case ctx.IsPost() && keyedPosts[string(path)]:
		_, aerr = s.admit.Authenticate(ctx, messagesStyle(ctx), false)
	}
	if aerr == nil {
		return fasthttp.StatusContinue
	}
	var id [requestIDLen]byte
	newRequestID(&id, s.now())
	ctx.Response.Header.SetBytesV("X-Request-Id", id[:])
	ctx.SetConnectionClose()
	writeError(ctx, aerr)
	return aerr.Status
}

// tooLargeFor is the 413 of an endpoint with the given body limit (bodyLimit).
func tooLargeFor(limit int) *apierror.Error {
	switch limit {
	case maxSystemOneBody:
		return errTooLargeSystemOne
	case maxForwardBody:
		return errTooLargeForward
	}
	return errTooLarge
}
