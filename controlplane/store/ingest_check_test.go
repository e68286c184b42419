package store

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/usage"
)

// FuzzCheckRecord decodes arbitrary bytes as a node's record and runs the ingest checks:
// they never panic, and a record they pass is within every bound, holds no NUL and is
// priced by the formula.
func FuzzCheckRecord(f *testing.F) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	good := usage.Record{RequestID: "req_1", TS: now, AccountID: "acct_0123456789abcdef", Model: "m", Status: 200,
		Result: "ok", PromptTokens: 10, CompletionTokens: 20, PriceMicroSEK: money.Price(10, 20, 150, 300)}
	f.Add(good.AppendJSON(nil))
	f.Add([]byte(`{"request_id":"x","ts":"2026-11-24T00:00:00Z","account_id":"a","result":"ok","prompt_tokens":9223372036854775807,"price_micro_sek":9223372036854775807}`))
	f.Add([]byte(`{"request_id":"x\u0000","ts":"2026-11-24T00:00:00Z","account_id":"a","result":"ok","status":4294967497}`))
	f.Add([]byte(`{"request_id":"x","prompt_tokens":-1}`))
	f.Add([]byte(`{"request_id":"x","ts":"2026-11-24T00:00:00Z","account_id":"a","result":"ok","ttft_ms":-1}`))
	prices := []price{{in: 150, out: 300}}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r usage.Record
		if json.Unmarshal(b, &r) != nil {
			return
		}
		const retention = 90 * 24 * time.Hour
		if code, _ := checkRecord(&r, now, retention); code != "" {
			return
		}
		if r.TS.Before(now.Add(-retention + retentionMargin)) {
			t.Fatalf("a record retention may have deleted passed: %s", r.TS)
		}
		if r.PromptTokens < 0 || r.PromptTokens > MaxRecordTokens || r.CompletionTokens < 0 || r.CompletionTokens > MaxRecordTokens ||
			r.PriceMicroSEK < 0 || r.PriceMicroSEK > MaxRecordPriceMicroSEK || r.Status < 0 || r.Status > 999 ||
			r.TTFTMS < 0 || r.TTFTMS > MaxRecordDurationMS ||
			r.RequestID == "" || r.AccountID == "" || strings.IndexByte(r.RequestID+r.AccountID+r.Model+r.Result, 0) >= 0 {
			t.Fatalf("passed checkRecord: %+v", r)
		}
		if code, _ := checkPrice(&r, prices); code == "" && r.PriceMicroSEK != money.Price(r.PromptTokens, r.CompletionTokens, 150, 300) {
			t.Fatalf("price %d passed for %d/%d tokens", r.PriceMicroSEK, r.PromptTokens, r.CompletionTokens)
		}
		rj := reject(&r, b, RejectInvalid, "x")
		if s := rj.storedRaw(); strings.IndexByte(s, 0) >= 0 || len(s) > maxRejectedRaw+32 {
			t.Fatal("stored raw not clean")
		}
	})
}

func TestAddChecked(t *testing.T) {
	for _, tc := range []struct {
		a, b int64
		ok   bool
	}{
		{1, 2, true}, {1<<63 - 1, 1, false}, {-1 << 63, -1, false}, {-1 << 63, 1, true}, {1<<63 - 1, -1, true}, {0, -1 << 63, true},
	} {
		a := tc.a
		if ok := addChecked(&a, tc.b); ok != tc.ok || (ok && a != tc.a+tc.b) || (!ok && a != tc.a) {
			t.Errorf("addChecked(%d, %d) = %d, %v", tc.a, tc.b, a, ok)
		}
	}
}
