package usage

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// checkDecode fails unless DecodeRecord (and, for valid JSON, DecodeValidRecord) gives
// encoding/json's record and error-ness.
func checkDecode(t *testing.T, raw []byte) {
	t.Helper()
	var want Record
	wantErr := json.Unmarshal(raw, &want)
	got, err := DecodeRecord(raw)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%q: error %v, encoding/json %v", raw, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %+v\nwant %+v", raw, got, want)
	}
	if !json.Valid(raw) {
		return
	}
	// Valid JSON: DecodeValidRecord, which skips validation, gives the same.
	got, err = DecodeValidRecord(raw)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%q: DecodeValidRecord error %v, encoding/json %v", raw, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: DecodeValidRecord\n got %+v\nwant %+v", raw, got, want)
	}
}

// Records as nodes write them take the fast path and decode as encoding/json does; so do
// odd ones, through the fallback.
func TestDecodeRecordMatchesEncodingJSON(t *testing.T) {
	key := "key_0123456789ab"
	plain := Record{RequestID: "req_01JD", TS: time.Date(2026, 11, 24, 6, 0, 0, 123456789, time.UTC), AccountID: "acct_1",
		KeyID: &key, Model: "m", Endpoint: "/v1/chat/completions", Stream: true, Provider: "p", Residency: "se",
		Status: 200, Result: ResultOK, PromptTokens: 12, CompletionTokens: 34, PriceMicroSEK: 56, DurationMS: 78, TTFTMS: 5,
		Routing: &Routing{Policy: "se", NodeRegion: "se-sto", Attempts: []Attempt{{Route: "a", Provider: "p", Region: "r", Status: 503, Error: "timeout", DurationMS: 3}}}}
	var r Record
	if !fastRecord(plain.AppendJSON(nil), &r) {
		t.Fatal("a plain record missed the fast path")
	}
	for _, rec := range sampleRecords() {
		checkDecode(t, rec.AppendJSON(nil))
	}
	checkDecode(t, plain.AppendJSON(nil))
	for _, raw := range []string{
		`{}`, `null`, `[]`, `"x"`, `{"request_id":1}`, `{"request_id":"a","request_id":"b"}`, `{"REQUEST_ID":"a"}`,
		`{"status":1.5}`, `{"ttft_ms":7}`, `{"ttft_ms":1.5}`, `{"ttft_ms":0}`, `{"status":1e2}`, `{"status":-0}`, `{"status":9223372036854775808}`, `{"prompt_tokens":"1"}`,
		`{"ts":null}`, `{"ts":"2026-11-24T06:00:00Z"}`, `{"ts":"yesterday"}`, `{"key_id":null}`, `{"key_id":"k"}`,
		`{"routing":null}`, `{"routing":{}}`, `{"routing":{"attempts":null}}`, `{"routing":{"attempts":[]}}`,
		`{"routing":{"attempts":[null]}}`, `{"routing":{"attempts":[{"status":"x"}]}}`, `{"routing":[]}`,
		`{"model":"caf\u00e9"}`, `{"model":"a\"b"}`, "{\"model\":\"\xff\"}", `{"stream":1}`, `{"stream":null}`,
		`{"extra":{"a":[1,2]},"model":"m"}`, `{"model":"m"} x`, `{"model":"m"`, ` {"model" : "m" } `,
		`{"routing":{"policy":"a","policy":"b"}}`, `{"routing":{"attempts":[{"route":"a","route":"b"}]}}`,
	} {
		checkDecode(t, []byte(raw))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		rec := plain
		rec.PromptTokens, rec.PriceMicroSEK, rec.Status = rng.Int64(), -rng.Int64(), rng.IntN(1000)
		rec.TS = time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).In(time.FixedZone("x", 3600*rng.IntN(12)))
		checkDecode(t, rec.AppendJSON(nil))
	}
}

func FuzzDecodeRecord(f *testing.F) {
	for _, rec := range sampleRecords() {
		f.Add(rec.AppendJSON(nil))
	}
	f.Add([]byte(`{"request_id":"a","routing":{"attempts":[{"route":"r","status":1}]}}`))
	f.Fuzz(func(t *testing.T, raw []byte) { checkDecode(t, raw) })
}

func BenchmarkDecodeRecord(b *testing.B) {
	raw := sampleRecords()[1].AppendJSON(nil)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = DecodeRecord(raw)
	}
}

func BenchmarkDecodeRecordEncodingJSON(b *testing.B) {
	raw := sampleRecords()[1].AppendJSON(nil)
	b.ReportAllocs()
	for b.Loop() {
		var r Record
		_ = json.Unmarshal(raw, &r)
	}
}
