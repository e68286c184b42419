package server

import (
	"fmt"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/suggest"
	"github.com/sekgate/gateway/shared/apierror"
)

// endpointNotFound answers an unknown path: 404 endpoint_not_found, naming the path meant
// when suggest.Path finds one (and the client's base URL when the mistake is there), in the
// Messages-style envelope when that path is a Messages one.
func (s *Server) endpointNotFound(ctx *fasthttp.RequestCtx) {
	hint, base := suggest.Path(ctx.Path())
	if hint == "" {
		writeError(ctx, errEndpointNotFound)
		return
	}
	ms := messagesPath([]byte(hint))
	msg := fmt.Sprintf("unknown endpoint %s; did you mean %s?", ctx.Path(), hint)
	if base {
		advice := s.base.Of(ctx) + "/v1 for OpenAI SDKs"
		if ms {
			advice = s.base.Of(ctx) + " without /v1 for Anthropic SDKs"
		}
		msg += " Check the client's base URL: " + advice + "."
	}
	writeErrorStyle(ctx, apierror.New(404, apierror.TypeNotFound, apierror.CodeEndpointNotFound, msg), ms)
}
