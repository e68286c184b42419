package api

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sekgate/gateway/controlplane/httpjson"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/apikey"
	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/usage"
)

// Request-list limits of the interface.
const (
	defaultListLimit = 20
	maxListLimit     = 100
)

// accountID returns the account the node authenticated, or writes an error.
func accountID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.Header.Get(internalapi.HeaderAccountID)
	if id == "" {
		writeError(w, httpjson.ErrNoAccount)
		return "", false
	}
	return id, true
}

type usageItemJSON struct {
	Model            string `json:"model"`
	Requests         int64  `json:"requests"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	PriceMicroSEK    int64  `json:"price_micro_sek"`
	PriceSEK         string `json:"price_sek"`
}

// serviceAccount answers GET /v1/service/account. usage_30d sums the daily aggregates of
// the last UsageWindow calendar days (UTC), today included. A suspended account reads it
// too (nodes forward it), with suspended and suspended_reason.
func (s *server) serviceAccount(w http.ResponseWriter, r *http.Request) {
	id, ok := accountID(w, r)
	if !ok {
		return
	}
	a, err := s.cfg.Store.GetAccount(r.Context(), id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			writeError(w, httpjson.ErrUnknownAccount)
			return
		}
		s.storeError(w, r, err, "account")
		return
	}
	from := s.now().UTC().AddDate(0, 0, -(s.cfg.UsageWindow - 1))
	u, err := s.cfg.Store.UsageSince(r.Context(), id, from)
	if err != nil {
		s.storeError(w, r, err, "usage")
		return
	}
	items := make([]usageItemJSON, len(u))
	for i, m := range u {
		items[i] = usageItemJSON{Model: m.Model, Requests: m.Requests, PromptTokens: m.PromptTokens,
			CompletionTokens: m.CompletionTokens, PriceMicroSEK: m.PriceMicroSEK, PriceSEK: money.FormatSEK(m.PriceMicroSEK)}
	}
	out := map[string]any{
		"customer":          a.Customer,
		"residency":         a.Residency,
		"balance_micro_sek": a.BalanceMicroSEK,
		"balance_sek":       money.FormatSEK(a.BalanceMicroSEK),
		"usage_30d":         items,
	}
	if a.Suspended {
		reason, err := s.cfg.Store.SuspensionReason(r.Context(), id)
		if err != nil {
			s.storeError(w, r, err, "suspension")
			return
		}
		out["suspended"], out["suspended_reason"] = true, reason
	}
	writeJSON(w, http.StatusOK, out)
}

// recordJSON is the interface's Request record.
type recordJSON struct {
	RequestID        string         `json:"request_id"`
	TS               string         `json:"ts"`
	KeyID            *string        `json:"key_id"`
	Model            string         `json:"model"`
	Provider         *string        `json:"provider"`
	Residency        *string        `json:"residency"`
	Status           int            `json:"status"`
	Result           string         `json:"result"`
	PromptTokens     int64          `json:"prompt_tokens"`
	CompletionTokens int64          `json:"completion_tokens"`
	PriceMicroSEK    int64          `json:"price_micro_sek"`
	PriceSEK         string         `json:"price_sek"`
	Routing          *usage.Routing `json:"routing"`
}

func strOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func toRecordJSON(r usage.Record) recordJSON {
	return recordJSON{
		RequestID: r.RequestID, TS: r.TS.UTC().Format(time.RFC3339Nano), KeyID: r.KeyID, Model: r.Model,
		Provider: strOrNil(r.Provider), Residency: strOrNil(r.Residency), Status: r.Status, Result: r.Result,
		PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens, PriceMicroSEK: r.PriceMicroSEK,
		PriceSEK: money.FormatSEK(r.PriceMicroSEK), Routing: r.Routing,
	}
}

// Cursors are opaque to clients: base64url of "<unix nanoseconds>.<request id>".
func encodeCursor(r usage.Record) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(r.TS.UnixNano(), 10) + "." + r.RequestID))
}

func decodeCursor(c string) (*store.RecordPos, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return nil, false
	}
	ns, id, ok := strings.Cut(string(b), ".")
	if !ok || id == "" {
		return nil, false
	}
	n, err := strconv.ParseInt(ns, 10, 64)
	if err != nil {
		return nil, false
	}
	return &store.RecordPos{TS: time.Unix(0, n).UTC(), RequestID: id}, true
}

// serviceRequests answers GET /v1/service/requests: newest first; limit 1..100 with
// anything else falling back to 20; key_id must look like a key ID (400 otherwise) and a
// key of another account gives an empty list; after (extension) continues from the
// next_after cursor of the previous page.
func (s *server) serviceRequests(w http.ResponseWriter, r *http.Request) {
	id, ok := accountID(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	limit := defaultListLimit
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n >= 1 && n <= maxListLimit {
		limit = n
	}
	rq := store.RecordQuery{AccountID: id, Limit: limit + 1}
	if q.Has("key_id") {
		k := q.Get("key_id")
		if !apikey.ValidID(k) {
			writeError(w, invalid("key_id", "key_id must match ^key_[0-9a-f]{12}$."))
			return
		}
		rq.KeyID = k
	}
	if q.Has("after") {
		pos, ok := decodeCursor(q.Get("after"))
		if !ok {
			writeError(w, invalid("after", "after must be a next_after cursor from a previous page."))
			return
		}
		rq.After = pos
	}
	recs, err := s.cfg.Store.ListRecords(r.Context(), rq)
	if err != nil {
		s.storeError(w, r, err, "requests")
		return
	}
	type page struct {
		Data      []recordJSON `json:"data"`
		HasMore   bool         `json:"has_more"`
		NextAfter *string      `json:"next_after"`
	}
	out := page{Data: []recordJSON{}}
	if len(recs) > limit {
		recs = recs[:limit]
		out.HasMore = true
		c := encodeCursor(recs[limit-1])
		out.NextAfter = &c
	}
	for _, rec := range recs {
		out.Data = append(out.Data, toRecordJSON(rec))
	}
	writeJSON(w, http.StatusOK, out)
}

// serviceRequest answers GET /v1/service/requests/{id}; another account's record and an
// unknown ID are both 404 request_not_found.
func (s *server) serviceRequest(w http.ResponseWriter, r *http.Request) {
	id, ok := accountID(w, r)
	if !ok {
		return
	}
	reqID := r.PathValue("id")
	if !store.ValidRequestID(reqID) { // no stored record has this shape; never reaches SQL
		writeError(w, httpjson.ErrRequestNotFound)
		return
	}
	rec, err := s.cfg.Store.GetRecord(r.Context(), id, reqID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			writeError(w, httpjson.ErrRequestNotFound)
			return
		}
		s.storeError(w, r, err, "request")
		return
	}
	writeJSON(w, http.StatusOK, toRecordJSON(rec))
}
