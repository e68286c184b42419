package server

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/shared/apierror"
)

// The server streams request bodies (fasthttp StreamRequestBody): before a handler runs,
// fasthttp reads a body of at most prefetchMax bytes (and one byte of a longer one), within
// BodyIdleTimeout of the headers. Handlers authenticate and check the declared length first and only then read
// the rest with readBody, into a buffer that grows as bytes arrive and never past the
// endpoint's limit. No allocation is ever sized by a header.
const prefetchMax = 8 << 10

// prefetchSize is how much of a body of declared length cl (-1: chunked) fasthttp reads
// before the handler runs, on an endpoint whose limit is limit: all of a body of at most
// prefetchMax bytes, and of a longer one a single byte (fasthttp's least), so that readBody
// takes the rest from the connection's read buffer and then straight from the socket into
// the body buffer. (An 8 KiB prefetch of a longer body made fasthttp refill its 8 KiB read
// buffer for the prefetch's last bytes: one more read system call and 16 KiB more copying
// per body than reading it whole.)
func prefetchSize(cl, limit int) int {
	if cl > prefetchMax {
		return 1
	}
	return limit
}

// bodyBufs holds the buffers inference handlers read bodies into; a handler returns its
// buffer once nothing can refer to the body any more. (Reading a 64 KiB body into fresh
// buffers allocated 112 KiB per request, and the garbage collector's work for it was a
// fifth of the data plane's CPU.)
var bodyBufs bodyBufPool

// maxPooledBody is the largest body buffer bodyBufPool keeps; a larger one is left to the
// collector, so that a few bodies near MaxBodySize do not stay pinned in every P's pool.
const maxPooledBody = 1 << 20

// bodyBufPool is a sync.Pool of body buffers that keeps every buffer up to maxPooledBody.
// (It was a bytebufferpool.Pool, whose calibration drops buffers larger than the 95th
// percentile of the sizes it was given: after many small requests, whose bodies fasthttp
// reads itself and whose buffers come back empty, it dropped every 64 KiB buffer, so a
// node that had served small requests allocated about 107 KiB per 64 KiB request again.)
type bodyBufPool struct{ p sync.Pool }

// get returns a buffer holder; its slice is empty and may have capacity.
func (bp *bodyBufPool) get() *[]byte {
	if b, ok := bp.p.Get().(*[]byte); ok {
		return b
	}
	return new([]byte)
}

// put takes b back; nothing may refer to its bytes any more.
func (bp *bodyBufPool) put(b *[]byte) {
	if cap(*b) > maxPooledBody {
		*b = nil
	}
	*b = (*b)[:0]
	bp.p.Put(b)
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

// readBody returns the request's body, at most limit bytes (tooLarge answers a longer one).
// A body that is still on the wire is read here with a deadline per read (BodyIdleTimeout)
// and a minimum average rate (MinBodyRate, after the first BodyIdleTimeout), into into
// when it is not nil (*into then holds the body until into is reused). On failure it has
// answered the client and marked the connection to be closed.
func (s *Server) readBody(ctx *fasthttp.RequestCtx, limit int, tooLarge *apierror.Error, into *[]byte) ([]byte, bool) {
	if !ctx.Request.IsBodyStream() {
		// Built in process (tests, benchmarks) or already read.
		b := ctx.PostBody()
		if len(b) > limit {
			ctx.SetConnectionClose()
			writeError(ctx, tooLarge)
			return nil, false
		}
		return b, true
	}
	cl := ctx.Request.Header.ContentLength()
	if cl > limit {
		ctx.SetConnectionClose()
		writeError(ctx, tooLarge)
		return nil, false
	}
	if cl >= 0 && cl <= prefetchMax {
		// Read in full before the handler ran (fasthttp's pooled buffer; no network read).
		return ctx.Request.Body(), true
	}
	var dst []byte
	if into != nil {
		dst = (*into)[:0]
	}
	buf, aerr := s.readStream(ctx, cl, limit, tooLarge, dst)
	if into != nil && buf != nil {
		*into = buf // the body, in the pool's buffer or in a grown one the pool then keeps
	}
	if aerr != nil {
		ctx.SetConnectionClose()
		writeError(ctx, aerr)
		return nil, false
	}
	ctx.Request.SetBodyRaw(buf) // also ends the body stream: the connection may be reused
	return buf, true
}

// readStream reads a streamed body of declared length cl (-1: chunked), appending to dst
// (its capacity reused; nil: a new buffer).
func (s *Server) readStream(ctx *fasthttp.RequestCtx, cl, limit int, tooLarge *apierror.Error, dst []byte) ([]byte, *apierror.Error) {
	r := ctx.RequestBodyStream()
	c := ctx.Conn()
	size := 16 << 10
	if cl > 0 {
		size = min(size, cl)
	}
	buf := dst[:0]
	if cap(buf) < size {
		buf = make([]byte, 0, size)
	}
	start := time.Now()
	idle := s.cfg.BodyIdleTimeout
	for {
		if len(buf) == cap(buf) {
			n := 2 * cap(buf)
			if cl > 0 {
				n = min(n, cl)
			}
			n = min(n, limit+1)
			if n <= len(buf) {
				n = len(buf) + 1
			}
			nb := make([]byte, len(buf), n)
			copy(nb, buf)
			buf = nb
		}
		now := time.Now()
		if c != nil {
			_ = c.SetReadDeadline(now.Add(idle))
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > limit {
			return nil, tooLarge
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var te interface{ Timeout() bool }
			if errors.As(err, &te) && te.Timeout() {
				return nil, errBodyTimeout
			}
			return nil, errBadBody
		}
		if el := time.Since(start); el > idle && s.cfg.MinBodyRate > 0 &&
			float64(len(buf)) < float64(s.cfg.MinBodyRate)*el.Seconds() {
			return nil, errBodyTimeout
		}
	}
	if c != nil {
		// The handler may still wait on the upstream; the next request's deadlines are set
		// by the server.
		_ = c.SetReadDeadline(time.Time{})
	}
	if cl >= 0 && len(buf) != cl {
		return nil, errBadBody
	}
	return buf, nil
}

// bodyLeft reports whether part of the request's body may still be unread on the
// connection (the connection must then be closed after the answer: the next bytes on it
// are not a request).
func bodyLeft(ctx *fasthttp.RequestCtx) bool {
	if !ctx.Request.IsBodyStream() {
		return false
	}
	cl := ctx.Request.Header.ContentLength()
	return cl == -1 || cl > prefetchMax
}

// badFraming reports a request whose raw header block has a Transfer-Encoding other than
// chunked, both Content-Length and Transfer-Encoding (RFC 9112 section 6.1: the framing cannot be trusted; fasthttp would
// serve it by Transfer-Encoding and keep the connection), or a header line folded onto the
// one before (obsolete line folding, which fasthttp joins; RFC 9112 section 5.2 allows
// refusing it, and a proxy in front may read it otherwise). Two Content-Length headers are
// refused by fasthttp itself.
func badFraming(raw []byte) bool {
	var cl, te bool
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i+1], raw[i+1:]
		} else {
			raw = nil
		}
		if len(line) == 0 {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			return true
		}
		switch line[0] | 0x20 {
		case 'c':
			cl = cl || hasKey(line, "content-length")
		case 't':
			if hasKey(line, "transfer-encoding") {
				if !chunkedValue(line) {
					return true
				}
				te = true
			}
		}
	}
	return cl && te
}

// chunkedValue reports whether a Transfer-Encoding header line's value is exactly chunked
// (any case): any other coding (identity, gzip, a list) is refused, as the interface says,
// since fasthttp reads identity without a length as an empty body and keeps the
// connection, so what follows would be served as the next request.
func chunkedValue(line []byte) bool {
	v := line[bytes.IndexByte(line, ':')+1:]
	return bytes.EqualFold(bytes.TrimSpace(v), []byte("chunked"))
}

// hasKey reports whether header line starts with key (any case) followed by optional
// whitespace and a colon.
func hasKey(line []byte, key string) bool {
	if len(line) < len(key) || !bytes.EqualFold(line[:len(key)], []byte(key)) {
		return false
	}
	rest := bytes.TrimLeft(line[len(key):], " \t")
	return len(rest) > 0 && rest[0] == ':'
}

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
	case badFraming(ctx.Request.Header.RawHeaders()):
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
