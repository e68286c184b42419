package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/usage"
)

// Bounds of one usage record. A node is not trusted: a record outside them is rejected
// (kept in rejected_records with the reason, never charged) and the rest of its batch
// applies.
const (
	// MaxRecordTokens bounds each token count of one record (usage.MaxRecordTokens, which
	// nodes keep to as well).
	MaxRecordTokens = usage.MaxRecordTokens
	// MaxRecordPriceMicroSEK bounds the price of one record: 1,000,000 SEK.
	MaxRecordPriceMicroSEK int64 = 1_000_000_000_000
	// MaxRecordDurationMS bounds a record's duration: 30 days.
	MaxRecordDurationMS int64 = 30 * 24 * 3600 * 1000
	// PriceGrace is how far back a record's price may come from: a record is accepted at
	// any price its model had from PriceGrace before the record's time on (a node prices
	// from its snapshot, which may lag a catalogue change, e.g. while the control plane was
	// unreachable), the current price included.
	PriceGrace = 24 * time.Hour
	// maxFutureSkew is how far ahead of the control plane's clock a record's time may be.
	maxFutureSkew = 24 * time.Hour
	// maxRejectedRaw bounds the stored raw record of a rejection.
	maxRejectedRaw = 16 << 10
	maxTextLen     = 200
	maxAttempts    = 100
)

// Rejection reasons (the prefix of rejected_records.reason).
const (
	RejectUndecodable   = "undecodable"
	RejectInvalid       = "invalid"
	RejectTokens        = "tokens_out_of_bounds"
	RejectPrice         = "price_out_of_bounds"
	RejectPriceMismatch = "price_mismatch"
	RejectUnknownModel  = "unknown_model"
	RejectOverflow      = "sum_overflow"
)

// minRecordTS is the earliest record time accepted.
var minRecordTS = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// rejection is a record the control plane does not accept.
type rejection struct {
	requestID, accountID string
	code                 string // one of the Reject* reasons
	reason               string
	raw                  []byte
}

func (r rejection) fingerprint() string {
	h := sha256.New()
	h.Write([]byte(r.reason))
	h.Write([]byte{0})
	h.Write(r.raw)
	return hex.EncodeToString(h.Sum(nil))
}

// storedRaw is the raw record as kept: valid UTF-8 without NUL bytes (Postgres text
// refuses both), at most maxRejectedRaw bytes.
func (r rejection) storedRaw() string {
	s := string(r.raw)
	if len(s) > maxRejectedRaw {
		s = s[:maxRejectedRaw] + "…(truncated)"
	}
	return cleanText(s)
}

func cleanText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

func reject(r *usage.Record, raw []byte, code, format string, args ...any) rejection {
	if raw == nil {
		raw = r.AppendJSON(nil)
	}
	reason := code
	if format != "" {
		reason += ": " + fmt.Sprintf(format, args...)
	}
	return rejection{requestID: cleanText(clip(r.RequestID)), accountID: cleanText(clip(r.AccountID)), code: code, reason: cleanText(reason), raw: raw}
}

func clip(s string) string {
	if len(s) > maxTextLen {
		return s[:maxTextLen]
	}
	return s
}

// ValidRequestID reports whether id could name a stored record: what the ingest accepts as
// a request_id (1 to 200 bytes without NUL), in valid UTF-8 (all Postgres text holds).
func ValidRequestID(id string) bool {
	return id != "" && okText(id, maxTextLen) && utf8.ValidString(id)
}

// okText reports whether s fits a text column of the records: at most max bytes, no NUL.
func okText(s string, max int) bool {
	return len(s) <= max && strings.IndexByte(s, 0) < 0
}

// retentionMargin is how much younger than the record retention a record must be: the
// control planes' clocks may differ by less.
const retentionMargin = time.Hour

// checkRecord applies the rules that need no database: identifiers, text, time (and, with a
// record retention, not older than retention less retentionMargin), status, and each count
// and the price within its bound. It returns the rejection code and detail, or "" when the
// record passes.
func checkRecord(r *usage.Record, now time.Time, retention time.Duration) (code, detail string) {
	if retention > 0 && r.TS.Before(now.Add(-retention+retentionMargin)) && !r.TS.IsZero() {
		return RejectInvalid, fmt.Sprintf("ts %s is older than the records' retention (%s) less %s: a copy retention deleted could not be told apart",
			r.TS.UTC().Format(time.RFC3339), retention, retentionMargin)
	}
	switch {
	case !ValidRequestID(r.RequestID):
		return RejectInvalid, "request_id must be 1 to 200 characters without NUL"
	case r.AccountID == "" || !okText(r.AccountID, maxTextLen):
		return RejectInvalid, "account_id must be 1 to 200 characters without NUL"
	case r.Result == "" || !okText(r.Result, maxTextLen):
		return RejectInvalid, "result must be 1 to 200 characters without NUL"
	case !okText(r.Model, maxTextLen) || !okText(r.Endpoint, maxTextLen) || !okText(r.Provider, maxTextLen) ||
		!okText(r.Residency, maxTextLen) || (r.KeyID != nil && !okText(*r.KeyID, maxTextLen)):
		return RejectInvalid, "text field longer than 200 characters or holding NUL"
	case r.TS.IsZero() || r.TS.Before(minRecordTS) || r.TS.After(now.Add(maxFutureSkew)):
		return RejectInvalid, fmt.Sprintf("ts %s outside %s to now + %s", r.TS.UTC().Format(time.RFC3339), minRecordTS.Format(time.DateOnly), maxFutureSkew)
	case r.Status < 0 || r.Status > 999:
		return RejectInvalid, fmt.Sprintf("status %d outside 0 to 999", r.Status)
	case r.DurationMS < 0 || r.DurationMS > MaxRecordDurationMS:
		return RejectInvalid, fmt.Sprintf("duration_ms %d outside 0 to %d", r.DurationMS, MaxRecordDurationMS)
	case r.TTFTMS < 0 || r.TTFTMS > MaxRecordDurationMS:
		return RejectInvalid, fmt.Sprintf("ttft_ms %d outside 0 to %d", r.TTFTMS, MaxRecordDurationMS)
	case r.PromptTokens < 0 || r.PromptTokens > MaxRecordTokens || r.CompletionTokens < 0 || r.CompletionTokens > MaxRecordTokens:
		return RejectTokens, fmt.Sprintf("prompt_tokens %d, completion_tokens %d: each must be 0 to %d", r.PromptTokens, r.CompletionTokens, MaxRecordTokens)
	case r.PriceMicroSEK < 0 || r.PriceMicroSEK > MaxRecordPriceMicroSEK:
		return RejectPrice, fmt.Sprintf("price_micro_sek %d outside 0 to %d", r.PriceMicroSEK, MaxRecordPriceMicroSEK)
	}
	if rt := r.Routing; rt != nil {
		if !okText(rt.Policy, maxTextLen) || !okText(rt.NodeRegion, maxTextLen) || len(rt.Attempts) > maxAttempts {
			return RejectInvalid, "routing policy or node region too long, or too many attempts"
		}
		if !okText(rt.Balancer, maxTextLen) || !okText(rt.Reason, maxTextLen) || rt.ServerQueue < 0 || rt.InFlight < 0 ||
			rt.QueuedMS < 0 || rt.QueuedMS > MaxRecordDurationMS {
			return RejectInvalid, "routing balancer or reason too long, or a negative queue, in-flight count or queue time"
		}
		for _, a := range rt.Attempts {
			if !okText(a.Route, maxTextLen) || !okText(a.Provider, maxTextLen) || !okText(a.Region, maxTextLen) ||
				!okText(a.Error, maxTextLen) || a.Status < 0 || a.Status > 999 || a.DurationMS < 0 || a.DurationMS > MaxRecordDurationMS {
				return RejectInvalid, "routing attempt with bad text, status or duration"
			}
		}
	}
	return "", ""
}

// price is one price a model had, and until when (zero: still current).
type price struct {
	in, out int64
	validTo time.Time
}

// checkPrice checks a record's price against the formula for its tokens at the prices
// its model had from ts − PriceGrace on: ceil(tokens × öre per million / 100) per kind,
// each rounded up, then added. A record with no tokens and no price needs no model.
func checkPrice(r *usage.Record, prices []price) (code, detail string) {
	if r.PromptTokens == 0 && r.CompletionTokens == 0 && r.PriceMicroSEK == 0 {
		return "", ""
	}
	if len(prices) == 0 {
		return RejectUnknownModel, fmt.Sprintf("model %q has no price", r.Model)
	}
	from := r.TS.Add(-PriceGrace)
	var want []int64
	for _, p := range prices {
		if !p.validTo.IsZero() && p.validTo.Before(from) {
			continue
		}
		f := money.Price(r.PromptTokens, r.CompletionTokens, p.in, p.out)
		if f == r.PriceMicroSEK {
			return "", ""
		}
		want = append(want, f)
	}
	return RejectPriceMismatch, fmt.Sprintf("price_micro_sek %d for %d prompt and %d completion tokens of %q; the formula gives %v",
		r.PriceMicroSEK, r.PromptTokens, r.CompletionTokens, r.Model, want)
}

// addChecked adds b to *a unless the sum leaves the int64 range; it reports success.
func addChecked(a *int64, b int64) bool {
	if (b > 0 && *a > math.MaxInt64-b) || (b < 0 && *a < math.MinInt64-b) {
		return false
	}
	*a += b
	return true
}
