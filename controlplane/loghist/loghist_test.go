package loghist

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestIndexMatchesRanges(t *testing.T) {
	for _, tc := range []struct {
		ms   int64
		want int
	}{{-5, 0}, {0, 0}, {1, 1}, {2, 5}, {3, 7}, {4, 9}, {1 << 22, Overflow}, {1<<22 - 1, Top}, {math.MaxInt64, Overflow}} {
		if got := Index(tc.ms); got != tc.want {
			t.Errorf("Index(%d) = %d, want %d", tc.ms, got, tc.want)
		}
	}
	// Every whole millisecond falls in the bucket whose range holds it, and ranges follow
	// one another without gaps.
	for ms := int64(0); ms < 200_000; ms++ {
		i := Index(ms)
		lo, hi := Range(i)
		if ms < lo || ms > hi {
			t.Fatalf("%d ms in bucket %d [%d, %d]", ms, i, lo, hi)
		}
	}
	for i := 1; i < Overflow; i++ {
		lo, hi := Range(i)
		if hi >= lo && float64(hi)/float64(lo) > math.Pow(2, 1.0/PerDoubling) {
			t.Errorf("bucket %d [%d, %d] wider than a quarter doubling", i, lo, hi)
		}
	}
}

// Percentiles read from the buckets are within RelErr of the exact nearest-rank
// percentile of the same times.
func TestQuantileWithinBound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		n := 1 + r.IntN(3000)
		times := make([]int64, n)
		var h Hist
		for i := range times {
			// Log-uniform from 0 to about an hour, with some exact zeros.
			v := int64(math.Exp(r.Float64() * 15))
			if r.IntN(50) == 0 {
				v = 0
			}
			times[i] = v
			h.Add(v)
		}
		slices.Sort(times)
		for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 1} {
			exact := float64(times[int(math.Ceil(q*float64(n)))-1])
			got, ok := h.Quantile(q)
			if !ok {
				t.Fatal("no quantile")
			}
			if exact == 0 && got != 0 || exact > 0 && math.Abs(got-exact)/exact > RelErr+1e-12 {
				t.Fatalf("round %d q %v: got %.3f, exact %.0f (bound %.4f)", round, q, got, exact, RelErr)
			}
		}
	}
	if _, ok := Hist(nil).Quantile(0.5); ok {
		t.Error("a quantile of nothing")
	}
}

func TestMergeTrimAppend(t *testing.T) {
	var a Hist
	a.Add(1)
	b := Hist{0, 0, 0, 0, 0, 2, 0, 0}
	a.Merge(b)
	if got := string(a.Trim().AppendPG(nil)); got != "{0,1,0,0,0,2}" {
		t.Fatalf("merged %s", got)
	}
	if a.Count() != 3 {
		t.Fatalf("count %d", a.Count())
	}
}
