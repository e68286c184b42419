// Package tracing is the data plane's OpenTelemetry tracing: a span per inference request
// (continuing the client's W3C traceparent when it sends one), a child span per upstream
// attempt whose context is propagated to the upstream in traceparent, and child spans for
// request translation and the usage spool write. Spans go to an OTLP/HTTP endpoint in
// batches, sampled by ratio (a sampled client trace is always continued).
//
// A nil *Tracer is tracing off: every method returns at once, and the request path pays a
// pointer comparison.
package tracing

import (
	"context"
	"errors"
	"fmt"

	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// Config configures a Tracer.
type Config struct {
	// Endpoint is the OTLP/HTTP traces URL (e.g. http://collector:4318/v1/traces). Required.
	Endpoint string
	// SampleRatio is the share of requests without a sampled parent that are traced, 0 to 1.
	SampleRatio float64
	// NodeID and Region describe this node in the spans' resource.
	NodeID, Region string
	// Version is the build's version (service.version).
	Version string
}

// Tracer starts the data plane's spans. Create it with New; a nil Tracer traces nothing.
type Tracer struct {
	tp   *sdktrace.TracerProvider
	t    trace.Tracer
	prop propagation.TraceContext
}

// New starts the exporter and the span batcher.
func New(ctx context.Context, cfg Config) (*Tracer, error) {
	if cfg.Endpoint == "" {
		return nil, errors.New("tracing: no endpoint")
	}
	if cfg.SampleRatio < 0 || cfg.SampleRatio > 1 {
		return nil, fmt.Errorf("tracing: sample ratio %v is not between 0 and 1", cfg.SampleRatio)
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(cfg.Endpoint))
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	attrs := []attribute.KeyValue{semconv.ServiceName("sekgate-dataplane"), semconv.ServiceInstanceID(cfg.NodeID)}
	if cfg.Version != "" {
		attrs = append(attrs, semconv.ServiceVersion(cfg.Version))
	}
	if cfg.Region != "" {
		attrs = append(attrs, attribute.String("gateway.node_region", cfg.Region))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewWithAttributes(semconv.SchemaURL, attrs...)),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SampleRatio))),
	)
	return &Tracer{tp: tp, t: tp.Tracer("github.com/sekgate/gateway/dataplane")}, nil
}

// Shutdown sends the spans still batched and stops the exporter.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// Request is an inference request's span and its context; the zero Request is not traced.
type Request struct {
	ctx  context.Context
	span trace.Span
}

// Traced reports whether r has a span.
func (r Request) Traced() bool { return r.span != nil }

// StartRequest starts the span of an inference request, continuing the trace of the
// client's traceparent header when it has one.
func (t *Tracer) StartRequest(ctx *fasthttp.RequestCtx, requestID string) Request {
	if t == nil {
		return Request{}
	}
	parent := t.prop.Extract(context.Background(), requestCarrier{&ctx.Request.Header})
	c, span := t.t.Start(parent, string(ctx.Method())+" "+string(ctx.Path()), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("gateway.request_id", requestID),
			attribute.String("http.request.method", string(ctx.Method())), attribute.String("url.path", string(ctx.Path()))))
	return Request{ctx: c, span: span}
}

// End ends the request's span with its answer's status and the outcome's attributes.
func (r Request) End(status int, attrs ...attribute.KeyValue) {
	if r.span == nil {
		return
	}
	r.span.SetAttributes(attribute.Int("http.response.status_code", status))
	r.span.SetAttributes(attrs...)
	if status >= 500 {
		r.span.SetStatus(codes.Error, "")
	}
	r.span.End()
}

// Child is a child span of a request.
type Child struct{ span trace.Span }

// StartAttempt starts the span of an upstream attempt on route (of provider) and writes its
// traceparent into the upstream request's headers.
func (r Request) StartAttempt(requestID, route, provider string, up *fasthttp.RequestHeader) Child {
	if r.span == nil {
		return Child{}
	}
	c, span := r.span.TracerProvider().Tracer("github.com/sekgate/gateway/dataplane").Start(r.ctx, "upstream "+route,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attribute.String("gateway.request_id", requestID),
			attribute.String("gateway.route", route), attribute.String("gateway.provider", provider)))
	propagation.TraceContext{}.Inject(c, requestCarrier{up})
	return Child{span}
}

// Start starts an internal child span named name (translation, spool write).
func (r Request) Start(name, requestID string) Child {
	if r.span == nil {
		return Child{}
	}
	_, span := r.span.TracerProvider().Tracer("github.com/sekgate/gateway/dataplane").Start(r.ctx, name,
		trace.WithAttributes(attribute.String("gateway.request_id", requestID)))
	return Child{span}
}

// End ends the child span; failure, when not empty, marks it failed with that reason.
func (c Child) End(failure string, attrs ...attribute.KeyValue) {
	if c.span == nil {
		return
	}
	c.span.SetAttributes(attrs...)
	if failure != "" {
		c.span.SetStatus(codes.Error, failure)
	}
	c.span.End()
}

// requestCarrier adapts fasthttp's request headers to the propagator.
type requestCarrier struct{ h *fasthttp.RequestHeader }

func (c requestCarrier) Get(key string) string { return string(c.h.Peek(key)) }
func (c requestCarrier) Set(key, value string) { c.h.Set(key, value) }
func (c requestCarrier) Keys() []string {
	var keys []string
	for k := range c.h.All() {
		keys = append(keys, string(k))
	}
	return keys
}
