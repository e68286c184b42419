package server

import (
	"time"

	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/attribute"

	"github.com/sekgate/gateway/dataplane/accesslog"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/settle"
	"github.com/sekgate/gateway/dataplane/tracing"
)

// userRouted marks a request that reached the attempt loop: its record makes its
// access-log line and ends its span. userTrace holds the span of a traced request until
// then.
const (
	userRouted = "gateway.routed"
	userTrace  = "gateway.trace"
)

// serveObserved routes a request with the access log or tracing on: an inference request
// gets its span, and one refused before routing gets its access-log line and its span
// ended here (a routed one's record does both, at its end).
func (s *Server) serveObserved(ctx *fasthttp.RequestCtx) {
	start := s.now()
	inference := isInferencePath(ctx.Path())
	var tr tracing.Request
	if inference && s.tracer != nil {
		tr = s.tracer.StartRequest(ctx, requestID(ctx))
		ctx.SetUserValue(userTrace, tr)
	}
	s.router.Handler(ctx)
	if !inference || ctx.UserValue(userRouted) != nil {
		return
	}
	if s.access != nil {
		s.logRefusal(ctx, start)
	}
	tr.End(ctx.Response.StatusCode(), attribute.String("gateway.result", "refused"),
		attribute.String("gateway.error", responseCode(ctx.Response.Body())))
}

// routed hands the request's span to its record box and marks the request routed.
func (s *Server) routed(ctx *fasthttp.RequestCtx, box *settle.Box) {
	ctx.SetUserValue(userRouted, true)
	if tr, ok := ctx.UserValue(userTrace).(tracing.Request); ok {
		box.Trace = tr
	}
}

// responseCode is the error code (or type) of a JSON error answer, or "".
func responseCode(body []byte) string {
	if c := gjson.GetBytes(body, "error.code"); c.Type == gjson.String {
		return c.Str
	}
	if c := gjson.GetBytes(body, "error.type"); c.Type == gjson.String {
		return c.Str
	}
	return ""
}

// logRefusal writes the access-log line of an inference request answered without a record
// (refused before routing: authentication, balance, limits, size, invalid input).
func (s *Server) logRefusal(ctx *fasthttp.RequestCtx, start time.Time) {
	st := ctx.Response.StatusCode()
	e := accesslog.Entry{Time: start, RequestID: requestID(ctx), Endpoint: string(ctx.Path()), Status: st,
		Result: "refused", NodeRegion: s.cfg.Region, Duration: s.now().Sub(start), Error: responseCode(ctx.Response.Body())}
	if st < 300 {
		e.Result = "ok" // not an inference answer (e.g. OPTIONS)
	}
	s.access.Write(&e)
}

// isInferencePath reports whether path is one of the inference endpoints.
func isInferencePath(path []byte) bool {
	_, ok := index.EndpointOf(string(path)) // no allocation: the conversion does not escape
	return ok
}
