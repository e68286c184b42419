package console

import (
	"net/url"
	"testing"
)

func TestDisplaySEK(t *testing.T) {
	for micro, want := range map[int64]string{
		1_250_499_889: "1,250.50", 999_999_960: "1,000.00", 0: "0.00", 4_999: "0.00", 5_000: "0.01",
		-12_500_000: "-12.50", -4_000: "0.00", 1_234_567_890_000: "1,234,567.89", 100_000_000: "100.00",
	} {
		if got := displaySEK(micro); got != want {
			t.Errorf("displaySEK(%d) = %q, want %q", micro, got, want)
		}
	}
}

func TestNormalizeAmount(t *testing.T) {
	for in, want := range map[string]string{
		"1 250,50": "1250.50", "1250.50": "1250.50", "1,250.50": "1250.50", "1.250,50": "1250.50",
		"1\u00a0250,5": "1250.5", "-12,50": "-12.50", " 100 ": "100", "1,2,3": "1,2,3",
	} {
		if got := normalizeAmount(in); got != want {
			t.Errorf("normalizeAmount(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRecordsQueryDays(t *testing.T) {
	q := recordsQuery(url.Values{"from_day": {"2026-11-01"}, "to_day": {"2026-11-02"}, "result": {"ok"}, "bogus": {"x"}}, 50)
	if q.Get("from") != "2026-11-01T00:00:00Z" || q.Get("to") != "2026-11-03T00:00:00Z" || q.Get("result") != "ok" || q.Has("bogus") || q.Get("limit") != "50" {
		t.Fatalf("query %v", q)
	}
}
