package api

import (
	"testing"
	"time"

	"github.com/sekgate/gateway/shared/usage"
)

func TestCursorRoundTrip(t *testing.T) {
	r := usage.Record{RequestID: "req_01.J/x", TS: time.Date(2026, 11, 22, 1, 2, 3, 456789000, time.UTC)}
	pos, ok := decodeCursor(encodeCursor(r))
	if !ok || !pos.TS.Equal(r.TS) || pos.RequestID != r.RequestID {
		t.Fatalf("round trip: %+v %v", pos, ok)
	}
}

func FuzzDecodeCursor(f *testing.F) {
	f.Add(encodeCursor(usage.Record{RequestID: "req_1", TS: time.Unix(1, 2)}))
	f.Add("")
	f.Add("!!!")
	f.Add("LTEu")
	f.Fuzz(func(t *testing.T, c string) {
		pos, ok := decodeCursor(c)
		if ok && (pos == nil || pos.RequestID == "") {
			t.Fatalf("accepted cursor %q without a position", c)
		}
	})
}
