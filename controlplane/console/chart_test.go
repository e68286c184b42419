package console

import (
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

func TestUsageChart(t *testing.T) {
	now := time.Date(2026, 11, 24, 15, 0, 0, 0, time.UTC)
	day := func(back int) string { return now.AddDate(0, 0, -back).Format(time.DateOnly) }
	tests := []struct {
		name  string
		data  []adminapi.DailyUsage
		empty bool
		bars  []bar // X, H, Fill
		max   string
	}{
		{"no usage", nil, true, nil, ""},
		{"oldest and newest day, two models stacked", []adminapi.DailyUsage{
			{Day: day(29), Model: "b", PriceMicroSEK: 500_000},
			{Day: day(0), Model: "a", PriceMicroSEK: 1_000_000},
			{Day: day(0), Model: "b", PriceMicroSEK: 1_000_000},
		}, false, []bar{{X: 2, Y: 120, H: 40, Fill: palette[1]}, {X: 698, Y: 80, H: 80, Fill: palette[0]}, {X: 698, Y: 0, H: 80, Fill: palette[1]}}, "2.00"},
		{"a day before the window is left out", []adminapi.DailyUsage{{Day: day(30), Model: "a", PriceMicroSEK: 5}, {Day: day(1), Model: "a", PriceMicroSEK: 1}},
			false, []bar{{X: 674, Y: 0, H: 160, Fill: palette[0]}}, "0.000001"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := usageChart(adminapi.UsageReport{Days: 30, Data: tt.data}, now)
			if ch.Empty != tt.empty || ch.MaxSEK != tt.max && !tt.empty {
				t.Fatalf("empty %v max %q", ch.Empty, ch.MaxSEK)
			}
			if len(ch.Bars) != len(tt.bars) {
				t.Fatalf("bars %+v", ch.Bars)
			}
			for i, b := range tt.bars {
				got := ch.Bars[i]
				if got.X != b.X || got.H != b.H || got.Y != b.Y || got.Fill != b.Fill {
					t.Errorf("bar %d = %+v, want X %d Y %d H %d %s", i, got, b.X, b.Y, b.H, b.Fill)
				}
			}
		})
	}
}
