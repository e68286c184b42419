package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/catalog"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/reqparse"
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/usage"
)

// recordBox holds a record with its routing detail in one allocation.
type recordBox struct {
	rec     usage.Record
	routing usage.Routing
	attempt [1]usage.Attempt
}

// admit authenticates an inference request, checks the balance and sets X-Service-Policy.
func (s *Server) admit(ctx *fasthttp.RequestCtx, allowXAPIKey bool) (principal, bool) {
	p, aerr := s.authenticate(ctx, allowXAPIKey, true)
	if p.acct != nil {
		ctx.Response.Header.Set("X-Service-Policy", p.acct.Residency)
	}
	if aerr != nil {
		writeError(ctx, aerr)
		return p, false
	}
	if s.cfg.Meter.Spendable(p.acct.ID) <= 0 {
		writeError(ctx, errBalance)
		return p, false
	}
	return p, true
}

// resolve finds the visible model a request names.
func resolve(p principal, name string) (*catalog.Model, bool) {
	m, ok := p.idx.Model(name)
	if !ok {
		return nil, false
	}
	_, ok = p.acct.VisibleModel(m.ID)
	return m, ok
}

// inference returns the handler of a same-protocol inference endpoint.
func (s *Server) inference(e catalog.Endpoint) fasthttp.RequestHandler {
	allowXAPIKey := e == catalog.EPMessages
	return func(ctx *fasthttp.RequestCtx) {
		start := s.now()
		p, ok := s.admit(ctx, allowXAPIKey)
		if !ok {
			return
		}
		body := ctx.PostBody()
		if e == catalog.EPSystemOne && len(body) > maxSystemOneBody {
			writeError(ctx, errTooLargeSystemOne)
			return
		}
		req, perr := reqparse.Parse(e.Path(), body)
		if perr != nil {
			writeError(ctx, perr)
			return
		}
		if e == catalog.EPEmbeddings || e == catalog.EPSystemOne {
			req.Stream = false
		}
		m, ok := resolve(p, req.Model)
		if !ok {
			writeError(ctx, errModelNotFound)
			return
		}
		cand, ok := s.pick(m.Candidates(p.acct.Residency, e))
		if !ok {
			writeError(ctx, errUnsupportedProtocol)
			return
		}
		s.forward(ctx, p, m, e, &req, cand.Route, body, start)
	}
}

// pick chooses a native route; translated candidates are served by the translation layer.
func (s *Server) pick(cands []catalog.Candidate) (catalog.Candidate, bool) {
	native := cands
	for i, c := range cands {
		if c.Translate {
			// Rare: copy only when the list mixes translated candidates in.
			native = make([]catalog.Candidate, 0, len(cands))
			for _, c := range cands[i:] {
				if !c.Translate {
					native = append(native, c)
				}
			}
			native = append(cands[:i:i], native...)
			break
		}
	}
	return s.cfg.Selector.Pick(native)
}

// forward sends the request to route r and relays the answer; it always hands a record to
// the meter.
func (s *Server) forward(ctx *fasthttp.RequestCtx, p principal, m *catalog.Model, e catalog.Endpoint,
	pr *reqparse.Request, r *catalog.Route, body []byte, start time.Time) {
	box := &recordBox{}
	rec := &box.rec
	rec.RequestID = requestID(ctx)
	rec.TS = start
	rec.AccountID = p.acct.ID
	rec.KeyID = &p.key.ID
	rec.Model = m.ID
	rec.Endpoint = e.Path()
	rec.Stream = pr.Stream
	rec.Provider = r.Provider
	rec.Residency = r.Region
	box.routing.Policy = p.acct.Residency
	box.routing.Attempts = box.attempt[:]
	att := &box.attempt[0]
	att.Route, att.Provider, att.Region = r.ID, r.Provider, r.Region
	rec.Routing = &box.routing

	ctx.Response.Header.Set("X-Service-Provider", r.Provider)
	ctx.Response.Header.Set("X-Service-Residency", r.Region)

	out, err := proxy.RewriteBody(body, pr.Model, r.UpstreamModel, pr.Stream, pr.IncludeUsage)
	if err != nil {
		s.finish(ctx, box, m, start, apierror.InvalidParam("", "request body cannot be edited for the upstream"), usage.ResultRejected)
		return
	}
	up := s.cfg.Pool.For(r)
	ureq := fasthttp.AcquireRequest()
	uresp := fasthttp.AcquireResponse()
	up.Prepare(ureq, r, e, out, rec.RequestID, pr.Stream)
	t0 := time.Now()
	err = up.Do(ureq, uresp, pr.Stream)
	fasthttp.ReleaseRequest(ureq)
	att.DurationMS = time.Since(t0).Milliseconds()
	if err != nil {
		fasthttp.ReleaseResponse(uresp)
		att.Error = proxy.Classify(err)
		if s.log.Enabled(context.Background(), slog.LevelDebug) {
			s.log.Debug("upstream failed", "request_id", rec.RequestID, "route", r.ID, "err", err)
		}
		s.finish(ctx, box, m, start, transportError(att.Error), resultOf(att.Error))
		return
	}
	status := uresp.StatusCode()
	att.Status = status
	if status != fasthttp.StatusOK {
		aerr, result := upstreamStatusError(status, uresp, e)
		_ = uresp.CloseBodyStream()
		fasthttp.ReleaseResponse(uresp)
		s.finish(ctx, box, m, start, aerr, result)
		return
	}
	if pr.Stream {
		s.relayStream(ctx, box, m, e, pr, up, uresp, start)
		return
	}
	rb := uresp.Body()
	if !reqparse.ValidJSON(rb) { // depth-bounded: gjson's validator alone is recursive
		fasthttp.ReleaseResponse(uresp)
		att.Error = "invalid_response"
		s.finish(ctx, box, m, start, errInvalidUpstream, usage.ResultUpstreamError)
		return
	}
	rec.PromptTokens, rec.CompletionTokens, _ = proxy.Usage(e, rb)
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentTypeBytes(uresp.Header.ContentType())
	ctx.SetBody(rb)
	fasthttp.ReleaseResponse(uresp)
	s.finish(ctx, box, m, start, nil, usage.ResultOK)
}

var errInvalidUpstream = apierror.New(502, apierror.TypeUpstream, apierror.CodeProviderError,
	"the provider returned an invalid response")

// relayStream peeks the first event (an error there is still a JSON error), then streams.
func (s *Server) relayStream(ctx *fasthttp.RequestCtx, box *recordBox, m *catalog.Model, e catalog.Endpoint,
	pr *reqparse.Request, up *proxy.Upstream, uresp *fasthttp.Response, start time.Time) {
	att := &box.attempt[0]
	if !bytes.HasPrefix(uresp.Header.ContentType(), []byte("text/event-stream")) {
		_ = uresp.CloseBodyStream()
		fasthttp.ReleaseResponse(uresp)
		att.Error = "invalid_response"
		s.finish(ctx, box, m, start, errInvalidUpstream, usage.ResultUpstreamError)
		return
	}
	st := proxy.OpenStream(uresp, e, !pr.IncludeUsage, up.TotalTimeout())
	if err := st.Peek(); err != nil {
		st.Close()
		fasthttp.ReleaseResponse(uresp)
		class := proxy.FailTransport
		if errors.Is(err, proxy.ErrStreamTimeout) || proxy.Classify(err) == proxy.FailTimeout {
			class = proxy.FailTimeout
		}
		att.Error = class
		s.finish(ctx, box, m, start, transportError(class), resultOf(class))
		return
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("text/event-stream")
	ctx.Response.Header.Set("Cache-Control", "no-cache")
	ctx.Response.Header.Set("X-Accel-Buffering", "no")
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		st.Relay(w)
		st.Close()
		fasthttp.ReleaseResponse(uresp)
		rec := &box.rec
		rec.PromptTokens, rec.CompletionTokens = st.Result.PromptTokens, st.Result.CompletionTokens
		result := usage.ResultOK
		switch {
		case st.Result.ClientGone:
			result = usage.ResultCancelled
		case errors.Is(st.Result.Err, proxy.ErrStreamTimeout) || proxy.Classify(st.Result.Err) == proxy.FailTimeout:
			result = usage.ResultTimeout
		case st.Result.Err != nil || !st.Result.Done:
			result = usage.ResultIncomplete
		}
		s.record(box, m, start, 200, result)
	})
}

// finish answers with aerr (nil: the response is already set) and records the request.
func (s *Server) finish(ctx *fasthttp.RequestCtx, box *recordBox, m *catalog.Model, start time.Time, aerr *apierror.Error, result string) {
	status := fasthttp.StatusOK
	if aerr != nil {
		writeError(ctx, aerr)
		status = aerr.Status
	}
	s.record(box, m, start, status, result)
}

func (s *Server) record(box *recordBox, m *catalog.Model, start time.Time, status int, result string) {
	rec := &box.rec
	rec.Status = status
	rec.Result = result
	out := rec.CompletionTokens
	if rec.Endpoint == catalog.EPEmbeddings.Path() {
		out = 0 // embeddings bill input tokens only
		rec.CompletionTokens = 0
	}
	rec.PriceMicroSEK = money.Price(rec.PromptTokens, out, m.InputOrePerMillion, m.OutputOrePerMillion)
	rec.DurationMS = s.now().Sub(start).Milliseconds()
	s.cfg.Meter.Record(rec)
}

func resultOf(class string) string {
	switch class {
	case proxy.FailTimeout:
		return usage.ResultTimeout
	case proxy.FailOverload, proxy.FailConfig:
		return usage.ResultNoRoute
	}
	return usage.ResultUpstreamError
}

func transportError(class string) *apierror.Error {
	switch class {
	case proxy.FailTimeout:
		return errProviderTimeout
	case proxy.FailOverload, proxy.FailConfig:
		return errNoRoute
	}
	return errProviderTransport
}

var (
	errProviderTimeout = apierror.New(504, apierror.TypeTimeout, apierror.CodeProviderTimeout,
		"the provider did not answer in time")
	errProviderTransport = apierror.New(502, apierror.TypeUpstream, apierror.CodeProviderError,
		"the provider could not be reached or broke the connection")
	errProviderRateLimited = apierror.New(429, apierror.TypeRateLimit, apierror.CodeProviderRateLimited,
		"the provider is at capacity; retry with backoff")
	errProviderUnavailable = apierror.New(503, apierror.TypeOverloaded, apierror.CodeNoRoute,
		"the provider is unavailable; retry shortly")
	errProviderFailed = apierror.New(502, apierror.TypeUpstream, apierror.CodeProviderError,
		"the provider failed to serve the request")
)

// upstreamStatusError maps a non-200 upstream answer to the gateway's error.
func upstreamStatusError(status int, resp *fasthttp.Response, e catalog.Endpoint) (*apierror.Error, string) {
	switch {
	case status == 429:
		ra := proxy.RetryAfter(resp)
		if ra > 0 {
			return errProviderRateLimited.WithRetryAfter(ra), usage.ResultRateLimited
		}
		return errProviderRateLimited, usage.ResultRateLimited
	case status == 503:
		return errProviderUnavailable.WithRetryAfter(max(proxy.RetryAfter(resp), 1)), usage.ResultUpstreamError
	case status == 504:
		return errProviderTimeout, usage.ResultTimeout
	case status == 400 || status == 422 || status == 413:
		// The provider refused the input (e.g. context window exceeded): the client's error.
		msg := "the provider refused the request"
		if !resp.StreamBody || resp.BodyStream() == nil {
			b := resp.Body()
			for _, path := range []string{"error.message", "message", "detail"} {
				if v := gjson.GetBytes(b, path); v.Type == gjson.String && v.Str != "" {
					msg = "the provider refused the request: " + truncate(v.Str, 500)
					break
				}
			}
		}
		st := 400
		if status == 413 {
			st = 413
		}
		return apierror.New(st, apierror.TypeInvalidRequest, "provider_rejected", msg), usage.ResultRejected
	}
	return errProviderFailed, usage.ResultUpstreamError
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// countTokens answers /v1/messages/count_tokens: no route supports it, so a visible model
// gets 400 unsupported_protocol; a positive balance is still required.
func (s *Server) countTokens(ctx *fasthttp.RequestCtx) {
	p, ok := s.admit(ctx, true)
	if !ok {
		return
	}
	// reqparse applies every count_tokens rule and bounds nesting before any recursive
	// parser sees the client's bytes.
	req, perr := reqparse.Parse(reqparse.EndpointCountTokens, ctx.PostBody())
	if perr != nil {
		writeError(ctx, perr)
		return
	}
	if _, ok := resolve(p, req.Model); !ok {
		writeError(ctx, errModelNotFound)
		return
	}
	writeError(ctx, apierror.New(400, apierror.TypeInvalidRequest, apierror.CodeUnsupportedProtocol,
		"token counting is not supported by any route of this model; it is not an estimator").WithParam("model"))
}
