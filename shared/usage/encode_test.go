package usage

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

func sampleRecords() []Record {
	key := "key_0123456789ab"
	odd := "key_\"\\\n\t\x01\u2028é\xff"
	ts := time.Date(2026, 11, 22, 3, 4, 5, 123456789, time.UTC)
	return []Record{
		{},
		{RequestID: "req_1", TS: ts, AccountID: "acct_1", KeyID: &key, Model: "m", Endpoint: "/v1/chat/completions",
			Stream: true, Provider: "p", Residency: "se-sto", Status: 200, Result: ResultOK, PromptTokens: 12,
			CompletionTokens: 34, PriceMicroSEK: 56, DurationMS: 78, TTFTMS: 9,
			Routing: &Routing{Policy: "se", NodeRegion: "se-sto", Translated: true, UsageEstimated: true, Attempts: []Attempt{
				{Route: "a", Provider: "p", Region: "r", Status: 503, Error: "timeout", DurationMS: 3},
				{Route: "b", Provider: "q", Region: "s", Status: 200, DurationMS: 4}}}},
		{RequestID: odd, TS: ts.In(time.FixedZone("CET", 3600)), KeyID: &odd, Model: "<&>", Routing: &Routing{}},
		{RequestID: "neg", PriceMicroSEK: -5, Status: 499, Routing: &Routing{Attempts: []Attempt{}}},
		{RequestID: "bal", Routing: &Routing{Policy: "eu", Balancer: "scored", Reason: "affinity", ServerQueue: 3,
			InFlight: 2, QueuedMS: 40, Attempts: []Attempt{{Route: "a", Status: 200}}}},
	}
}

// AppendJSON produces the same JSON value as encoding/json, for fixed and random records.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	recs := sampleRecords()
	r := rand.New(rand.NewPCG(5, 6))
	str := func() string {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return string(b)
	}
	for range 2000 {
		k := str()
		rec := Record{RequestID: str(), TS: time.Unix(r.Int64N(4e9), r.Int64N(1e9)).UTC(), AccountID: str(),
			Model: str(), Endpoint: str(), Stream: r.IntN(2) == 0, Provider: str(), Residency: str(),
			Status: r.IntN(600), Result: str(), PromptTokens: r.Int64(), CompletionTokens: r.Int64N(1e6),
			PriceMicroSEK: r.Int64() - r.Int64(), DurationMS: r.Int64N(1e7), TTFTMS: r.Int64N(3) * r.Int64N(1e5)}
		if r.IntN(2) == 0 {
			rec.KeyID = &k
		}
		if r.IntN(2) == 0 {
			rec.Routing = &Routing{Policy: str(), NodeRegion: str(), Translated: r.IntN(2) == 0, UsageEstimated: r.IntN(2) == 0}
			for range r.IntN(4) {
				rec.Routing.Attempts = append(rec.Routing.Attempts, Attempt{Route: str(), Provider: str(),
					Region: str(), Status: r.IntN(600), Error: str(), DurationMS: r.Int64N(1e5)})
			}
		}
		recs = append(recs, rec)
	}
	for i := range recs {
		want, err := json.Marshal(&recs[i])
		if err != nil {
			t.Fatal(err)
		}
		got := recs[i].AppendJSON(nil)
		var a, b any
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("record %d: invalid JSON %q: %v", i, got, err)
		}
		if err := json.Unmarshal(want, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("record %d:\n got %s\nwant %s", i, got, want)
		}
		if rt := recs[i].Routing; rt != nil {
			want, _ := json.Marshal(rt)
			got := rt.AppendJSON(nil)
			var a, b any
			if err := json.Unmarshal(got, &a); err != nil {
				t.Fatalf("routing of record %d: invalid JSON %q: %v", i, got, err)
			}
			_ = json.Unmarshal(want, &b)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("routing of record %d:\n got %s\nwant %s", i, got, want)
			}
		}
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	rec := sampleRecords()[1]
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = rec.AppendJSON(buf[:0])
	}
}

func BenchmarkEncodingJSON(b *testing.B) {
	rec := sampleRecords()[1]
	b.ReportAllocs()
	for b.Loop() {
		_, _ = json.Marshal(&rec)
	}
}
