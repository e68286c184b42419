// Package loghist is a histogram of millisecond times in fixed log-spaced buckets, four per
// doubling, so percentiles over any range can be read from bucket counts that were kept
// per minute and added up, with a known error.
//
// Bucket 0 holds 0 ms. Bucket i (1 to Top) holds the whole milliseconds v with
// 2^((i-1)/4) <= v < 2^(i/4), about 19 % wide; bucket Overflow holds 2^22 ms (about 70
// minutes) and more. A percentile is read as the geometric mean of its bucket's smallest
// and largest whole millisecond, so for times under 2^22 ms it is within RelErr (9.05 %) of
// the true value at the same rank; buckets holding a single whole millisecond (every time
// up to 4 ms) are exact, 0 ms is exact, and a percentile in Overflow is its lower bound.
package loghist

import (
	"math"
	"strconv"
)

const (
	// PerDoubling is the number of buckets per doubling of time.
	PerDoubling = 4
	// Top is the last bucket below Overflow: 22 doublings above 1 ms.
	Top = 22 * PerDoubling
	// Overflow is the bucket of 2^22 ms (4,194,304 ms) and more.
	Overflow = Top + 1
	// N is the number of buckets.
	N = Overflow + 1
)

// RelErr bounds a percentile's relative error: 2^(1/8) - 1, half a bucket's width on a
// log scale.
var RelErr = math.Pow(2, 1.0/(2*PerDoubling)) - 1

// lows[i] is the smallest whole millisecond of bucket i (ceil(2^((i-1)/4)) for i >= 1);
// lows[N] ends Overflow.
var lows [N + 1]int64

func init() {
	lows[0] = 0
	for i := 1; i <= Overflow; i++ {
		lows[i] = int64(math.Ceil(math.Pow(2, float64(i-1)/PerDoubling)))
	}
	lows[N] = math.MaxInt64
}

// Index is the bucket of ms (negative counts as 0).
func Index(ms int64) int {
	if ms <= 0 {
		return 0
	}
	lo, hi := 1, Overflow // the answer is in [lo, hi]: lows[lo] <= ms
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if lows[mid] <= ms {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// Range is bucket i's smallest and largest whole millisecond (hi is math.MaxInt64 for
// Overflow); an empty bucket (two thresholds round to one millisecond) has hi < lo.
func Range(i int) (lo, hi int64) {
	if i == Overflow {
		return lows[i], math.MaxInt64
	}
	return lows[i], lows[i+1] - 1
}

// Value is the time a percentile in bucket i reads as: the geometric mean of its range
// (its lower bound for Overflow).
func Value(i int) float64 {
	lo, hi := Range(i)
	if i == Overflow || lo == hi || lo == 0 {
		return float64(lo)
	}
	return math.Sqrt(float64(lo) * float64(hi))
}

// Hist is bucket counts, indexed by bucket; it may be shorter than N (missing buckets
// are 0).
type Hist []int64

// Add counts ms.
func (h *Hist) Add(ms int64) {
	i := Index(ms)
	for len(*h) <= i {
		*h = append(*h, 0)
	}
	(*h)[i]++
}

// Merge adds o's counts to h.
func (h *Hist) Merge(o Hist) {
	for len(*h) < len(o) {
		*h = append(*h, 0)
	}
	for i, n := range o {
		(*h)[i] += n
	}
}

// Count is the number of times counted.
func (h Hist) Count() int64 {
	var n int64
	for _, c := range h {
		n += c
	}
	return n
}

// Quantile is the q-quantile (0 < q <= 1) by nearest rank: the value at rank ceil(q·n) of
// the n times counted, read as Value of its bucket. ok is false when nothing was counted.
func (h Hist) Quantile(q float64) (ms float64, ok bool) {
	n := h.Count()
	if n == 0 {
		return 0, false
	}
	rank := int64(math.Ceil(q * float64(n)))
	rank = min(max(rank, 1), n)
	var seen int64
	for i, c := range h {
		seen += c
		if seen >= rank {
			return Value(i), true
		}
	}
	return Value(len(h) - 1), true
}

// Trim drops trailing empty buckets (how the store keeps them).
func (h Hist) Trim() Hist {
	n := len(h)
	for n > 0 && h[n-1] == 0 {
		n--
	}
	return h[:n]
}

// AppendPG appends h as a Postgres array literal ({1,0,3}).
func (h Hist) AppendPG(dst []byte) []byte {
	dst = append(dst, '{')
	for i, c := range h {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, c, 10)
	}
	return append(dst, '}')
}
