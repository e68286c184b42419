package simulator

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/shared/jsonenc"
)

// maxBody bounds request bodies the simulator reads.
const maxBody = 32 << 20

var (
	ctJSON  = []string{"application/json"}
	ctText  = []string{"text/plain; charset=utf-8"}
	ctSSE   = []string{"text/event-stream"}
	noCache = []string{"no-cache"}
)

var bufPool = sync.Pool{New: func() any { return bytes.NewBuffer(make([]byte, 0, 4096)) }}

// call is one inference request being answered.
type call struct {
	s      *Server
	w      http.ResponseWriter
	r      *http.Request
	ctx    context.Context
	root   gjson.Result // parsed request body
	k      Knobs        // effective knobs
	model  string
	stream bool
	done   bool // answer complete
	out    []byte
}

func (s *Server) serveInference(w http.ResponseWriter, r *http.Request, idx int, h handlerFunc) {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	_, err := buf.ReadFrom(io.LimitReader(r.Body, maxBody+1))
	body := buf.String()
	if buf.Cap() <= 1<<20 {
		bufPool.Put(buf)
	}
	messagesStyle := idx == pathMessages
	if err != nil {
		s.stats.cancelled.Add(1)
		return
	}
	if len(body) > maxBody {
		writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "request body too large", messagesStyle)
		return
	}
	if !gjson.Valid(body) {
		s.stats.bad.Add(1)
		writeError(w, http.StatusBadRequest, "invalid_request_error", "request body is not valid JSON", messagesStyle)
		return
	}
	root := gjson.Parse(body)
	if !root.IsObject() {
		s.stats.bad.Add(1)
		writeError(w, http.StatusBadRequest, "invalid_request_error", "request body must be a JSON object", messagesStyle)
		return
	}
	c := &call{s: s, w: w, r: r, ctx: r.Context(), root: root, k: *s.knobs.Load()}
	c.k.override(r.Header, root)
	m := root.Get("model")
	if m.Type != gjson.String || m.Str == "" {
		c.badRequest("model", "model is required")
		return
	}
	c.model = m.Str
	if salt := root.Get("cache_salt"); salt.Exists() && (salt.Type != gjson.String || salt.Str == "") {
		// vLLM's check (vllm/entrypoints/openai/protocol.py, check_cache_salt_support).
		c.badRequest("cache_salt", "Parameter 'cache_salt' must be a non-empty string if provided.")
		return
	}
	c.stream = root.Get("stream").Type == gjson.True && idx != pathEmbeddings && idx != pathSystemOne
	if c.stream {
		s.stats.streams.Add(1)
	}
	s.stats.inFlight.Add(1)
	defer func() {
		s.stats.inFlight.Add(-1)
		if c.done {
			s.stats.completed.Add(1)
		}
	}()
	if !c.wait(time.Duration(c.k.LatencyMS) * time.Millisecond) {
		return
	}
	if c.k.DropConnection {
		s.stats.injected.Add(1)
		panic(http.ErrAbortHandler)
	}
	status := 0
	if c.k.Status != 0 && c.k.Status != http.StatusOK {
		status = c.k.Status
	} else if chance(c.k.ErrorRate) {
		status = c.k.ErrorStatus
	}
	if status != 0 {
		s.stats.injected.Add(1)
		if c.k.RetryAfterS > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(c.k.RetryAfterS))
		}
		writeError(w, status, errorType(status), "simulated error "+strconv.Itoa(status)+" from "+s.cfg.Name, messagesStyle)
		return
	}
	if s.eng != nil {
		a, ok := s.engineAdmit(c)
		if !ok {
			return
		}
		defer s.eng.release(a)
	}
	h(w, r, c)
}

// badRequest answers 400 naming param.
func (c *call) badRequest(param, msg string) {
	c.s.stats.bad.Add(1)
	writeErrorParam(c.w, http.StatusBadRequest, "invalid_request_error", msg, param, c.r.URL.Path == "/v1/messages")
}

// wait sleeps d unless the client goes away first; it reports whether to go on.
func (c *call) wait(d time.Duration) bool {
	if d <= 0 {
		if c.ctx.Err() != nil {
			c.cancelled()
			return false
		}
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		c.cancelled()
		return false
	}
}

func (c *call) cancelled() { c.s.stats.cancelled.Add(1) }

// waitGeneration waits as long as producing n tokens takes: TTFT, then the pace of the
// remaining tokens.
func (c *call) waitGeneration(n int) bool {
	d := time.Duration(c.k.TTFTMS) * time.Millisecond
	if n > 1 {
		d += time.Duration(n-1) * c.k.tokenDelay()
	}
	return c.wait(d)
}

// writeJSON sends a complete non-streaming answer, honouring Malformed and FailAfterEvents.
func (c *call) writeJSON(body []byte) {
	h := c.w.Header()
	h["Content-Type"] = ctJSON
	if c.k.ContentType != "" {
		h["Content-Type"] = []string{c.k.ContentType}
	}
	if c.k.Malformed {
		c.s.stats.injected.Add(1)
		body = body[:len(body)/2]
		c.w.WriteHeader(http.StatusOK)
		c.w.Write(body)
		c.done = true
		return
	}
	if c.k.FailAfterEvents > 0 {
		c.s.stats.injected.Add(1)
		h["Content-Length"] = []string{strconv.Itoa(len(body))}
		c.w.WriteHeader(http.StatusOK)
		c.w.Write(body[:len(body)/2])
		http.NewResponseController(c.w).Flush()
		panic(http.ErrAbortHandler)
	}
	if _, err := c.w.Write(body); err != nil {
		c.cancelled()
		return
	}
	c.done = true
}

// errorType maps an injected status to an error type name.
func errorType(status int) string {
	switch {
	case status == 400:
		return "invalid_request_error"
	case status == 401:
		return "authentication_error"
	case status == 403:
		return "permission_error"
	case status == 404:
		return "not_found_error"
	case status == 429:
		return "rate_limit_error"
	case status == 503 || status == 529:
		return "overloaded_error"
	case status == 504:
		return "timeout_error"
	case status >= 500:
		return "api_error"
	}
	return "invalid_request_error"
}

// writeError writes an error envelope: OpenAI style, or Messages style with the top-level
// "type":"error".
func writeError(w http.ResponseWriter, status int, typ, msg string, messagesStyle bool) {
	writeErrorParam(w, status, typ, msg, "", messagesStyle)
}

func writeErrorParam(w http.ResponseWriter, status int, typ, msg, param string, messagesStyle bool) {
	b := make([]byte, 0, 128+len(msg))
	b = append(b, '{')
	if messagesStyle {
		b = append(b, `"type":"error",`...)
	}
	b = append(b, `"error":{"type":`...)
	b = jsonenc.AppendString(b, typ)
	b = append(b, `,"message":`...)
	b = jsonenc.AppendString(b, msg)
	if !messagesStyle {
		b = append(b, `,"param":`...)
		if param == "" {
			b = append(b, "null"...)
		} else {
			b = jsonenc.AppendString(b, param)
		}
		b = append(b, `,"code":null`...)
	}
	b = append(b, "}}\n"...)
	w.Header()["Content-Type"] = ctJSON
	w.WriteHeader(status)
	w.Write(b)
}

// sse writes a server-sent event stream, one flush per event.
type sse struct {
	c      *call
	rc     *http.ResponseController
	events int
	buf    []byte
	failed bool
}

// startStream sends the 200 headers, then waits for the first token (TTFT). It returns nil
// when the client went away.
func (c *call) startStream() *sse {
	h := c.w.Header()
	h["Content-Type"] = ctSSE
	if c.k.ContentType != "" {
		h["Content-Type"] = []string{c.k.ContentType}
	}
	h["Cache-Control"] = noCache
	c.w.WriteHeader(http.StatusOK)
	e := &sse{c: c, rc: http.NewResponseController(c.w), buf: make([]byte, 0, 512)}
	if err := e.rc.Flush(); err != nil {
		c.cancelled()
		return nil
	}
	if !c.wait(time.Duration(c.k.TTFTMS) * time.Millisecond) {
		return nil
	}
	return e
}

// pace waits between generated tokens (before token i > 0).
func (e *sse) pace(i int) bool {
	if i == 0 {
		return true
	}
	return e.c.wait(e.c.k.tokenDelay())
}

// send writes one event ("event: name" line when name is set, then "data: ..."), flushes,
// and reports whether the stream goes on. After FailAfterEvents events it breaks the
// connection.
func (e *sse) send(name string, data []byte) bool {
	if e.failed {
		return false
	}
	k := &e.c.k
	if k.GarbageAfterEvents > 0 && e.events == k.GarbageAfterEvents {
		e.c.s.stats.injected.Add(1)
		if _, err := e.c.w.Write([]byte("data: <html>not json{{\n\n")); err != nil {
			return e.fail()
		}
	}
	e.buf = e.buf[:0]
	if name != "" {
		e.buf = append(e.buf, "event: "...)
		e.buf = append(e.buf, name...)
		e.buf = append(e.buf, '\n')
	}
	e.buf = append(e.buf, "data: "...)
	e.buf = append(e.buf, data...)
	e.buf = append(e.buf, '\n', '\n')
	if k.TruncateAfterEvents > 0 && e.events >= k.TruncateAfterEvents {
		e.c.s.stats.injected.Add(1)
		e.c.w.Write(e.buf[:len(e.buf)/2])
		e.rc.Flush()
		panic(http.ErrAbortHandler)
	}
	if _, err := e.c.w.Write(e.buf); err != nil {
		return e.fail()
	}
	if err := e.rc.Flush(); err != nil {
		return e.fail()
	}
	e.events++
	if e.c.k.FailAfterEvents > 0 && e.events >= e.c.k.FailAfterEvents {
		e.c.s.stats.injected.Add(1)
		panic(http.ErrAbortHandler)
	}
	return true
}

func (e *sse) fail() bool {
	e.failed = true
	e.c.cancelled()
	return false
}

// finish marks the stream complete (after its terminal event).
func (e *sse) finish() { e.c.done = true }

// outputLimit returns the number of tokens to generate and whether the limit cut it.
func (c *call) outputLimit(maxTokens gjson.Result) (n int, cut bool) {
	n = c.k.OutputTokens
	if maxTokens.Type == gjson.Number {
		if m := int(maxTokens.Int()); m >= 0 && m < n {
			return m, true
		}
	}
	return n, false
}
