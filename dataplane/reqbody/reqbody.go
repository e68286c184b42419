// Package reqbody reads request bodies that fasthttp streams (StreamRequestBody): within an
// idle timeout per read and a minimum rate, never past the endpoint's limit, into pooled
// buffers; and refuses requests whose framing cannot be trusted.
package reqbody

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/shared/apierror"
)

// Reader reads bodies.
type Reader struct {
	// IdleTimeout bounds each wait for body bytes; MinRate is the lowest average rate, in
	// bytes per second, at which a body may arrive once it has taken longer than
	// IdleTimeout (0: none).
	IdleTimeout time.Duration
	MinRate     int
}

// Reading's refusals.
var (
	ErrBodyTimeout = apierror.Fixed(apierror.New(408, apierror.TypeInvalidRequest, apierror.CodeRequestTimeout,
		"the request body arrived too slowly"))
	ErrBadBody = apierror.Fixed(apierror.New(400, apierror.TypeInvalidRequest, "", "malformed request body framing"))
)

// The server streams request bodies (fasthttp StreamRequestBody): before a handler runs,
// fasthttp reads a body of at most PrefetchMax bytes (and one byte of a longer one), within
// BodyIdleTimeout of the headers. Handlers authenticate and check the declared length first and only then read
// the rest with Reader.Read, into a buffer that grows as bytes arrive and never past the
// endpoint's limit. No allocation is ever sized by a header.
const PrefetchMax = 8 << 10

// PrefetchSize is how much of a body of declared length cl (-1: chunked) fasthttp reads
// before the handler runs, on an endpoint whose limit is limit: all of a body of at most
// PrefetchMax bytes, and of a longer one a single byte (fasthttp's least), so that Read
// takes the rest from the connection's read buffer and then straight from the socket into
// the body buffer. (An 8 KiB prefetch of a longer body made fasthttp refill its 8 KiB read
// buffer for the prefetch's last bytes: one more read system call and 16 KiB more copying
// per body than reading it whole.)
func PrefetchSize(cl, limit int) int {
	if cl > PrefetchMax {
		return 1
	}
	return limit
}

// MaxPooled is the largest body buffer Pool keeps; a larger one is left to the
// collector, so that a few bodies near MaxBodySize do not stay pinned in every P's pool.
const MaxPooled = 1 << 20

// Pool is a sync.Pool of body buffers that keeps every buffer up to MaxPooled.
// (It was a bytebufferpool.Pool, whose calibration drops buffers larger than the 95th
// percentile of the sizes it was given: after many small requests, whose bodies fasthttp
// reads itself and whose buffers come back empty, it dropped every 64 KiB buffer, so a
// node that had served small requests allocated about 107 KiB per 64 KiB request again.)
type Pool struct{ p sync.Pool }

// Get returns a buffer holder; its slice is empty and may have capacity.
func (bp *Pool) Get() *[]byte {
	if b, ok := bp.p.Get().(*[]byte); ok {
		return b
	}
	return new([]byte)
}

// Put takes b back; nothing may refer to its bytes any more.
func (bp *Pool) Put(b *[]byte) {
	if cap(*b) > MaxPooled {
		*b = nil
	}
	*b = (*b)[:0]
	bp.p.Put(b)
}

// Read returns the request's body, at most limit bytes (tooLarge answers a longer one).
// A body that is still on the wire is read here with a deadline per read (BodyIdleTimeout)
// and a minimum average rate (MinBodyRate, after the first BodyIdleTimeout), into into
// when it is not nil (*into then holds the body until into is reused). On failure the
// connection is marked to be closed and the error is the client's answer.
func (r Reader) Read(ctx *fasthttp.RequestCtx, limit int, tooLarge *apierror.Error, into *[]byte) ([]byte, *apierror.Error) {
	if !ctx.Request.IsBodyStream() {
		// Built in process (tests, benchmarks) or already read.
		b := ctx.PostBody()
		if len(b) > limit {
			ctx.SetConnectionClose()
			return nil, tooLarge
		}
		return b, nil
	}
	cl := ctx.Request.Header.ContentLength()
	if cl > limit {
		ctx.SetConnectionClose()
		return nil, tooLarge
	}
	if cl >= 0 && cl <= PrefetchMax {
		// Read in full before the handler ran (fasthttp's pooled buffer; no network read).
		return ctx.Request.Body(), nil
	}
	var dst []byte
	if into != nil {
		dst = (*into)[:0]
	}
	buf, aerr := r.readStream(ctx, cl, limit, tooLarge, dst)
	if into != nil && buf != nil {
		*into = buf // the body, in the pool's buffer or in a grown one the pool then keeps
	}
	if aerr != nil {
		ctx.SetConnectionClose()
		return nil, aerr
	}
	ctx.Request.SetBodyRaw(buf) // also ends the body stream: the connection may be reused
	return buf, nil
}

// readStream reads a streamed body of declared length cl (-1: chunked), appending to dst
// (its capacity reused; nil: a new buffer).
func (r Reader) readStream(ctx *fasthttp.RequestCtx, cl, limit int, tooLarge *apierror.Error, dst []byte) ([]byte, *apierror.Error) {
	rd := ctx.RequestBodyStream()
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
	idle := r.IdleTimeout
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
		n, err := rd.Read(buf[len(buf):cap(buf)])
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
				return nil, ErrBodyTimeout
			}
			return nil, ErrBadBody
		}
		if el := time.Since(start); el > idle && r.MinRate > 0 &&
			float64(len(buf)) < float64(r.MinRate)*el.Seconds() {
			return nil, ErrBodyTimeout
		}
	}
	if c != nil {
		// The handler may still wait on the upstream; the next request's deadlines are set
		// by the server.
		_ = c.SetReadDeadline(time.Time{})
	}
	if cl >= 0 && len(buf) != cl {
		return nil, ErrBadBody
	}
	return buf, nil
}

// Left reports whether part of the request's body may still be unread on the
// connection (the connection must then be closed after the answer: the next bytes on it
// are not a request).
func Left(ctx *fasthttp.RequestCtx) bool {
	if !ctx.Request.IsBodyStream() {
		return false
	}
	cl := ctx.Request.Header.ContentLength()
	return cl == -1 || cl > PrefetchMax
}

// BadFraming reports a request whose raw header block has a Transfer-Encoding other than
// chunked, both Content-Length and Transfer-Encoding (RFC 9112 section 6.1: the framing cannot be trusted; fasthttp would
// serve it by Transfer-Encoding and keep the connection), or a header line folded onto the
// one before (obsolete line folding, which fasthttp joins; RFC 9112 section 5.2 allows
// refusing it, and a proxy in front may read it otherwise). Two Content-Length headers are
// refused by fasthttp itself.
func BadFraming(raw []byte) bool {
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
