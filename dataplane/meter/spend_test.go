package meter

import (
	"fmt"
	"maps"
	"testing"
)

func TestBatchAddSpend(t *testing.T) {
	recs := []string{
		`{"request_id":"req_1","account_id":"acct_a","price_micro_sek":100}`,
		`{"request_id":"req_2","account_id":"acct_b","price_micro_sek":7}`,
		`{"request_id":"req_3","account_id":"acct_a","price_micro_sek":25}`,
		`{"request_id":"req_4","account_id":"acct_\u0063","price_micro_sek":1}`,
		`{"request_id":"req_5","account_id":"acct_c","price_micro_sek":2}`,
	}
	b := &batch{spend: map[string]int64{}}
	buf := make([]byte, 0, 256)
	for _, r := range recs {
		buf = append(buf[:0], r...)
		b.addSpend(buf)
		for i := range buf { // the spool reuses its buffer: the map must not see this
			buf[i] = 'x'
		}
	}
	want := map[string]int64{"acct_a": 125, "acct_b": 7, "acct_c": 3}
	if !maps.Equal(b.spend, want) {
		t.Fatalf("spend = %v, want %v", b.spend, want)
	}
}

// BenchmarkAddSpend is what reading a batch costs per record beside the copy into the
// body: the record's account and price read for the batch's spend.
func BenchmarkAddSpend(b *testing.B) {
	recs := make([][]byte, 64)
	for i := range recs {
		recs[i] = mkRecord(i, fmt.Sprintf("acct_%d", i%4), int64(1000+i)).AppendJSON(nil)
	}
	bt := &batch{spend: map[string]int64{}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		bt.addSpend(recs[i%len(recs)])
		i++
	}
	if bt.spend["acct_1"] == 0 {
		b.Fatal("no spend counted")
	}
}
