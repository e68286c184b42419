package server

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/dialect"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/translate"
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/jsonenc"
)

// This file is the edge's side of the servers' dialects (dataplane/dialect): the client's
// answer to an error a server reported, in a body or inside its stream, and the end of a
// stream that did not complete.

// streamEndEvent is the error event that ends a stream of client endpoint e with msg:
// chat and text completions get a data line with the interface's error envelope (the
// OpenAI SDKs raise it), Messages-style an error event, Responses-style response.failed
// (the protocol's failure end) for response id, with the next sequence number seq.
func streamEndEvent(e index.Endpoint, msg, id string, seq int) []byte {
	ae := apierror.New(502, apierror.TypeUpstream, apierror.CodeProviderError, msg)
	switch e {
	case index.EPMessages:
		return []byte("event: error\ndata: " + string(ae.JSON(true)) + "\n\n")
	case index.EPResponses:
		b := []byte(`event: response.failed` + "\n" + `data: {"type":"response.failed","sequence_number":`)
		b = strconv.AppendInt(b, int64(seq), 10)
		b = append(b, `,"response":{"id":`...)
		b = jsonenc.AppendString(b, id)
		b = append(b, `,"object":"response","status":"failed","error":{"code":"server_error","message":`...)
		b = jsonenc.AppendString(b, msg)
		return append(b, `},"output":[]}}`+"\n\n"...)
	}
	return []byte("data: " + string(ae.JSON(false)) + "\n\n")
}

// clientAskedRunningUsage reports whether a chat request asks for the route's running usage itself.
func clientAskedRunningUsage(body []byte) bool {
	return gjson.GetBytes(body, "stream_options.continuous_usage_stats").Type == gjson.True
}

// dialectMemo remembers the server detected from the answers of each route that names
// none (dialect.Detect), so that later requests on it use that server's table. A route
// whose first detectTries whole answers show no server's sign is taken for a plain
// OpenAI-compatible server and its answers are no longer searched (every server's whole
// answers carry their sign; an operator can still name the route's server).
type dialectMemo struct{ m sync.Map } // memoKey -> *memoEntry

type memoKey struct{ route, baseURL string }

// detectTries is how many whole answers without a sign a route's detection reads.
const detectTries = 16

type memoEntry struct {
	server atomic.Uint32 // 1 + the dialect.Server detected; 0 while none is
	misses atomic.Int32  // whole answers read without a sign
}

// entry is route r's entry, made on first use.
func (dm *dialectMemo) entry(r *index.Route) *memoEntry {
	if e := dm.lookup(r); e != nil {
		return e
	}
	v, _ := dm.m.LoadOrStore(memoKey{r.ID, r.BaseURL}, new(memoEntry))
	return v.(*memoEntry)
}

// lookup is route r's entry, nil before its first use.
func (dm *dialectMemo) lookup(r *index.Route) *memoEntry {
	if v, ok := dm.m.Load(memoKey{r.ID, r.BaseURL}); ok {
		return v.(*memoEntry)
	}
	return nil
}

// of is the table of route r's server: the one it names, else the one detected, else
// OpenAI's (which reads every server's members).
func (dm *dialectMemo) of(r *index.Route) *dialect.Dialect {
	if r.Server != "" {
		return dialect.Of(r.Server)
	}
	if e := dm.lookup(r); e != nil {
		if s := e.server.Load(); s > 0 {
			return dialect.For(dialect.Server(s - 1))
		}
	}
	return dialect.Default()
}

// detecting reports whether route r's server is still to be detected.
func (dm *dialectMemo) detecting(r *index.Route) bool {
	if r.Server != "" {
		return false
	}
	e := dm.lookup(r)
	return e == nil || e.open()
}

// open reports whether the route's server is neither detected nor given up on.
func (e *memoEntry) open() bool { return e.server.Load() == 0 && e.misses.Load() < detectTries }

// learned records the server a stream on route r showed.
func (dm *dialectMemo) learned(r *index.Route, res *proxy.StreamResult) {
	if r != nil && r.Server == "" && res.ServerDetected {
		dm.entry(r).server.CompareAndSwap(0, uint32(res.Server)+1)
	}
}

// learn detects route r's server from a whole answer b (without allocating while nothing
// is found), until it is known or detectTries answers showed none.
func (dm *dialectMemo) learn(r *index.Route, b []byte) {
	if r.Server != "" {
		return
	}
	e := dm.entry(r)
	if !e.open() {
		return
	}
	if s, ok := dialect.Detect(b); ok {
		e.server.CompareAndSwap(0, uint32(s)+1)
		return
	}
	e.misses.Add(1)
}

// translateOptions are the options of a request translated onto route r: r's dialect and
// the request's stop sequences (Messages-style stop_sequences).
func translateOptions(c *upstreamCall, d *dialect.Dialect) translate.Options {
	o := translate.Options{Dialect: d}
	if c.e == index.EPMessages {
		gjson.GetBytes(c.raw, "stop_sequences").ForEach(func(_, v gjson.Result) bool {
			if v.Type == gjson.String {
				o.Stops = append(o.Stops, v.Str)
			}
			return true
		})
	}
	return o
}
