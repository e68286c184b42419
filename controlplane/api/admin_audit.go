package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/apikey"
)

// auditBodyLimit bounds what of a request or answer body the audit log keeps; a larger
// body (a catalogue file) is noted by its size.
const auditBodyLimit = 64 << 10

// captureWriter keeps the status and the first auditBodyLimit bytes of an answer.
type captureWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
	size   int
}

func (c *captureWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *captureWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	c.size += len(b)
	if room := auditBodyLimit - c.body.Len(); room > 0 {
		c.body.Write(b[:min(room, len(b))])
	}
	return c.ResponseWriter.Write(b)
}

// redacted returns a JSON body for the audit log with secrets removed: key secrets,
// session and CSRF tokens and passwords never reach it. A body too large or not JSON is
// noted by its size.
func redacted(b []byte, size int) json.RawMessage {
	if size == 0 {
		return nil
	}
	if size > auditBodyLimit || !json.Valid(b) {
		return json.RawMessage(`{"bytes":` + strconv.Itoa(size) + `}`)
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return b // not an object: no fields to remove
	}
	for _, k := range []string{"secret", "token", "csrf_token", "password"} {
		if _, ok := m[k]; ok {
			m[k] = json.RawMessage(`"[redacted]"`)
		}
	}
	out, _ := json.Marshal(m)
	return out
}

// audited runs h and appends the attempt to the audit log: the actor, the route, the
// target's state before and the answer after. guard calls it for changes only: a dry run
// of the catalogue, which changes nothing, is not recorded. The entry is written after the change; a
// failed write is logged (the change itself has happened).
func (s *server) audited(pattern string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := identityOf(r.Context())
		if r.Body == nil { // a handler called in process without a body
			r.Body = http.NoBody
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, catalogBodyLimit+1))
		if err != nil {
			writeError(w, invalid("body", "Could not read the request body."))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		target := r.PathValue("id")
		if target == "" {
			target = r.PathValue("name")
		}
		before := s.auditBefore(r.Context(), pattern, target)
		cw := &captureWriter{ResponseWriter: w}
		h(cw, r)
		if cw.status == 0 {
			cw.status = http.StatusOK
		}
		after := redacted(cw.body.Bytes(), cw.size)
		if target == "" && cw.status < 300 {
			var created struct {
				ID   string `json:"id"`
				Name string `json:"name"`
			}
			_ = json.Unmarshal(cw.body.Bytes(), &created)
			target = created.ID
			if target == "" {
				target = created.Name
			}
		}
		e := store.AuditEntry{Actor: id.actor, Role: id.role, Action: pattern, Target: target, Status: cw.status,
			Request: redacted(body, len(body)), Before: before, After: after, Credential: id.credential}
		if id.opToken != nil {
			e.TokenID, e.TokenName = id.opToken.ID, id.opToken.Name
		}
		if _, err := s.cfg.Store.AppendAudit(context.WithoutCancel(r.Context()), e); err != nil {
			s.log.Error("audit log write failed", "action", pattern, "actor", id.actor, "target", target, "err", err)
		}
	}
}

// auditBefore returns the target's state before a change, for the routes whose target the
// store can read (accounts, keys, operators, models, routes).
func (s *server) auditBefore(ctx context.Context, pattern, target string) json.RawMessage {
	if target == "" {
		return nil
	}
	_, path, _ := strings.Cut(pattern, " ")
	var v any
	switch {
	case strings.HasSuffix(path, "/{id}/budget"):
		isKey := strings.HasPrefix(path, "/admin/v1/keys/")
		if isKey && !apikey.ValidID(target) {
			return nil
		}
		st, err := s.budgetState(ctx, isKey, target)
		if err != nil {
			return nil
		}
		v = st
	case path == "/admin/v1/alert-rules/{id}":
		if v = s.alertRuleState(ctx, target); v == nil {
			return nil
		}
	case strings.HasPrefix(path, "/admin/v1/accounts/{id}"):
		a, err := s.cfg.Store.GetAccount(ctx, target)
		if err != nil {
			return nil
		}
		v = toAccountJSON(a)
	case strings.HasPrefix(path, "/admin/v1/keys/{id}"):
		if !apikey.ValidID(target) {
			return nil
		}
		k, err := s.cfg.Store.GetKey(ctx, target)
		if err != nil {
			return nil
		}
		v = toKeyJSON(k)
	case strings.HasPrefix(path, "/admin/v1/operators/{name}"):
		o, err := s.cfg.Store.GetOperator(ctx, target)
		if err != nil {
			return nil
		}
		v = toOperatorJSON(o)
	case path == "/admin/v1/models/{id}":
		m, err := s.cfg.Store.GetModel(ctx, target)
		if err != nil {
			return nil
		}
		v = modelJSON(m)
	case path == "/admin/v1/routes/{id}":
		rt, err := s.cfg.Store.GetRoute(ctx, target)
		if err != nil {
			return nil
		}
		v = adminapi.NewPatchedRoute(rt)
	case path == "/admin/v1/tokens/{id}/revoke":
		t, err := s.cfg.Store.GetOperatorToken(ctx, target)
		if err != nil {
			return nil
		}
		v = s.toTokenJSON(t)
	default:
		return nil
	}
	b, _ := json.Marshal(v)
	return b
}

// listAudit is GET /admin/v1/audit?target=&actor=&before=&limit=.
func (s *server) listAudit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, before, ok := beforePage(w, q)
	if !ok {
		return
	}
	es, err := s.cfg.Store.ListAudit(r.Context(), store.AuditQuery{Target: q.Get("target"), Actor: q.Get("actor"), Before: before, Limit: limit})
	if err != nil {
		s.storeError(w, r, err, "audit log")
		return
	}
	out := adminapi.AuditPage{Data: make([]adminapi.AuditEntry, len(es))}
	for i, e := range es {
		out.Data[i] = adminapi.AuditEntry{ID: e.ID, At: e.At, Actor: e.Actor, Role: e.Role, Action: e.Action, Target: e.Target,
			Status: e.Status, Credential: e.Credential, TokenID: e.TokenID, TokenName: e.TokenName,
			Request: nullJSON(e.Request), Before: nullJSON(e.Before), After: nullJSON(e.After)}
	}
	if len(es) == limit {
		next := es[len(es)-1].ID
		out.NextBefore = &next
	}
	writeJSON(w, http.StatusOK, out)
}

func nullJSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// pageLimit parses a limit of 1..1000 (default 50).
func pageLimit(w http.ResponseWriter, s string) (int, bool) {
	if s == "" {
		return 50, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 1000 {
		writeError(w, invalid("limit", "limit must be an integer from 1 to 1000."))
		return 0, false
	}
	return n, true
}

// beforePage parses the limit and before parameters of a listing paged by a descending ID
// (the ledger, the audit log).
func beforePage(w http.ResponseWriter, q url.Values) (limit int, before int64, ok bool) {
	if limit, ok = pageLimit(w, q.Get("limit")); !ok {
		return 0, 0, false
	}
	if before, ok = positiveID(w, "before", q.Get("before")); !ok {
		return 0, 0, false
	}
	return limit, before, true
}

// positiveID parses an optional positive integer cursor.
func positiveID(w http.ResponseWriter, param, s string) (int64, bool) {
	if s == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		writeError(w, invalid(param, "%s must be a positive integer.", param))
		return 0, false
	}
	return n, true
}
