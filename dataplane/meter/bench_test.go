package meter

import (
	"sync/atomic"
	"testing"
)

// BenchmarkRecord measures the hot-path hand-over (encode, count spend, write() to the
// segment); the syncer fsyncs in the background as in production.
func BenchmarkRecord(b *testing.B) {
	m := newMeter(b, testConfig(b, "http://127.0.0.1:1", b.TempDir()))
	rec := mkRecord(5, "acct_a", 1234)
	b.ReportAllocs()
	for b.Loop() {
		m.Record(rec)
	}
	b.StopTimer()
	flush(b, m)
}

func BenchmarkRecordParallel(b *testing.B) {
	m := newMeter(b, testConfig(b, "http://127.0.0.1:1", b.TempDir()))
	var i atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		rec := mkRecord(int(i.Add(1)), "acct_a", 1234)
		for pb.Next() {
			m.Record(rec)
		}
	})
	b.StopTimer()
	flush(b, m)
}

func BenchmarkSpendable(b *testing.B) {
	m := newMeter(b, testConfig(b, "http://127.0.0.1:1", b.TempDir()))
	m.Record(mkRecord(1, "acct_a", 1))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if m.Spendable("acct_a") > 0 {
				b.Fatal("positive")
			}
		}
	})
}
