package loadstat

import (
	"testing"
	"time"
)

// A route's pace is learned from the differences of its server's timing totals, once
// enough requests finished between two reports; totals that go back start again.
func TestPace(t *testing.T) {
	at := func(finished int64, prefill, run float64, queried, cached int64) Report {
		return Report{Running: 1, KV: -1, Timing: Timing{PrefillSeconds: prefill, InferenceSeconds: run,
			Finished: finished, QueriedTokens: queried, CachedTokens: cached}}
	}
	tests := []struct {
		name    string
		reports []Report
		want    Pace
	}{
		{"no timing reported", []Report{{Running: 1}, {Running: 2}}, Pace{}},
		{"one report: nothing to compare", []Report{at(100, 10, 30, 1e5, 5e4)}, Pace{}},
		{"too few requests between reports", []Report{at(100, 10, 30, 1e5, 5e4), at(107, 11, 33, 1e5+7000, 5e4)}, Pace{}},
		// 10 requests: 3.5 s running (350 ms each), 0.6 s of prefill over 1,000 tokens
		// not cached (0.6 ms each).
		{"learned", []Report{at(100, 10, 30, 1e5, 5e4), at(110, 10.6, 33.5, 1e5+5000, 5e4+4000)},
			Pace{PrefillPerToken: 600 * time.Microsecond, Turn: 350 * time.Millisecond}},
		{"the server restarted", []Report{at(100, 10, 30, 1e5, 5e4), at(10, 0.6, 3.5, 5000, 4000), at(20, 1.2, 7, 10000, 8000)},
			Pace{PrefillPerToken: 600 * time.Microsecond, Turn: 350 * time.Millisecond}},
		{"every prompt cached: the turn only", []Report{at(100, 10, 30, 1e5, 5e4), at(110, 10.2, 33.5, 1e5+5000, 5e4+5000)},
			Pace{Turn: 350 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Route
			for i, rep := range tt.reports {
				r.SetServer(rep, int64(i+1)*int64(time.Second), 0)
			}
			got := r.Pace()
			if d := got.PrefillPerToken - tt.want.PrefillPerToken; d < -time.Microsecond || d > time.Microsecond {
				t.Errorf("prefill per token %v, want %v", got.PrefillPerToken, tt.want.PrefillPerToken)
			}
			if d := got.Turn - tt.want.Turn; d < -time.Microsecond || d > time.Microsecond {
				t.Errorf("turn %v, want %v", got.Turn, tt.want.Turn)
			}
		})
	}
}
