package snapshot

import (
	"testing"
	"time"
)

func TestPeriodStartEnd(t *testing.T) {
	at := time.Date(2026, 11, 28, 23, 59, 59, 0, time.FixedZone("CET", 3600)) // 22:59:59 UTC, a Saturday
	tests := []struct {
		period     string
		start, end string
	}{
		{PeriodDay, "2026-11-28T00:00:00Z", "2026-11-29T00:00:00Z"},
		{PeriodWeek, "2026-11-23T00:00:00Z", "2026-11-30T00:00:00Z"},
		{PeriodMonth, "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z"},
		{"", "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z"},
	}
	for _, tc := range tests {
		if got := PeriodStart(tc.period, at).Format(time.RFC3339); got != tc.start {
			t.Errorf("PeriodStart(%q) = %s, want %s", tc.period, got, tc.start)
		}
		if got := PeriodEnd(tc.period, at).Format(time.RFC3339); got != tc.end {
			t.Errorf("PeriodEnd(%q) = %s, want %s", tc.period, got, tc.end)
		}
	}
	// A Monday starts its own week; the last day of December ends the year's month.
	mon := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	if got := PeriodStart(PeriodWeek, mon); !got.Equal(mon) {
		t.Errorf("week of a Monday starts %s", got)
	}
	dec := time.Date(2026, 12, 31, 12, 0, 0, 0, time.UTC)
	if got := PeriodEnd(PeriodMonth, dec); !got.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("December ends %s", got)
	}
}

func TestBudgetValidate(t *testing.T) {
	tests := []struct {
		b  Budget
		ok bool
	}{
		{Budget{PeriodMonth, 1}, true},
		{Budget{PeriodDay, 5_000_000}, true},
		{Budget{"year", 1}, false},
		{Budget{PeriodWeek, 0}, false},
		{Budget{PeriodWeek, -3}, false},
	}
	for _, tc := range tests {
		if err := tc.b.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: err %v, want ok %v", tc.b, err, tc.ok)
		}
	}
}
