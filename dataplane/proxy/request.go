package proxy

import (
	"time"

	"github.com/tidwall/sjson"
	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/index"
)

// MessagesVersion is the anthropic-version sent to native Messages-style upstreams: the
// protocol version whose shapes the gateway speaks.
const MessagesVersion = "2023-06-01"

// Prepare fills req for a call to route r's endpoint e with body. body must stay unchanged
// until the call completes (it is not copied).
func (u *Upstream) Prepare(req *fasthttp.Request, r *index.Route, e index.Endpoint, body []byte, requestID string, stream bool) {
	req.Header.SetMethod(fasthttp.MethodPost)
	uri := req.URI()
	uri.DisablePathNormalizing = true
	if r.UpstreamTLS {
		uri.SetScheme("https")
	} else {
		uri.SetScheme("http")
	}
	uri.SetHost(u.host)
	uri.SetPath(r.URLPath(e))
	req.Header.SetHost(u.host)
	req.Header.SetContentType("application/json")
	req.Header.SetUserAgent(u.userAgent)
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	if u.auth != "" {
		req.Header.Set("Authorization", u.auth)
	}
	if e == index.EPMessages {
		// Messages-style servers want a protocol version, and some read the key only from
		// x-api-key (vLLM and llama.cpp accept either).
		req.Header.Set("anthropic-version", MessagesVersion)
		if u.apiKey != "" {
			req.Header.Set("x-api-key", u.apiKey)
		}
	}
	if requestID != "" {
		req.Header.Set("X-Request-Id", requestID)
	}
	req.SetBodyRaw(body)
}

// Do sends req and waits for the response headers until deadline (zero: now plus the
// upstream's total timeout). Without stream the whole body is read within the deadline;
// with stream the call returns after the headers, the body is read with resp.BodyStream()
// (idle timeout between reads, reads capped by the deadline) and must be closed with
// CloseBodyStream.
//
// call, when not nil, lets another goroutine cancel the exchange at once (see Call); it
// must stay untouched until call.Done. For a stream the first-byte timeout bounds the wait
// for the headers; a non-streaming answer arrives whole when generation ends, so its wait
// is bounded only by the deadline.
func (u *Upstream) Do(req *fasthttp.Request, resp *fasthttp.Response, stream bool, deadline time.Time, call *Call) error {
	if u.credentialErr != nil {
		return u.credentialErr
	}
	if deadline.IsZero() {
		deadline = time.Now().Add(u.total)
	}
	if call != nil {
		if call.Cancelled() {
			return ErrCancelled
		}
		call.firstByte = u.firstByte
		if !stream {
			call.firstByte = u.total
		}
		body := req.Body()
		call.hook = bodyHook{call: call, resp: resp, body: body}
		req.SetBodyStream(&call.hook, len(body))
	}
	// A buffered answer is fetched as a stream too and read here in bounded blocks
	// (bodyread.go): fasthttp's own buffering grows by doubling up to its limit.
	resp.StreamBody = true
	err := u.hc.DoDeadline(req, resp, deadline)
	if err == nil && !stream {
		err = readBody(resp, u.pool.cfg.MaxResponseBodySize, &u.pool.buffered)
	}
	if err != nil && call != nil && call.Cancelled() {
		return ErrCancelled
	}
	return err
}

// TotalTimeout is the upstream's limit on a whole exchange.
func (u *Upstream) TotalTimeout() time.Duration { return u.total }

// RewriteBody makes the minimal edits a same-protocol body needs before it goes upstream:
// the model name becomes the route's upstream model when it differs, and a stream always
// asks for usage (so it can be billed); continuousUsage also asks for running usage in
// every chunk (vLLM's stream_options.continuous_usage_stats, a route flag). It returns
// body itself when nothing changes.
func RewriteBody(body []byte, sentModel, upstreamModel string, stream, clientIncludeUsage, continuousUsage bool) ([]byte, error) {
	var err error
	if sentModel != upstreamModel {
		if body, err = sjson.SetBytes(body, "model", upstreamModel); err != nil {
			return nil, err
		}
	}
	if stream && !clientIncludeUsage {
		if body, err = sjson.SetBytes(body, "stream_options.include_usage", true); err != nil {
			return nil, err
		}
	}
	if continuousUsage {
		if body, err = sjson.SetBytes(body, "stream_options.continuous_usage_stats", true); err != nil {
			return nil, err
		}
	}
	return body, nil
}
