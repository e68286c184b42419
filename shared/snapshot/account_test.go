package snapshot

import (
	"encoding/json"
	"testing"
)

func TestAccountWeight(t *testing.T) {
	for _, tc := range []struct {
		json string
		want int
	}{
		{`{"id":"a"}`, 1},
		{`{"id":"a","queue_weight":0}`, 1},
		{`{"id":"a","queue_weight":1}`, 1},
		{`{"id":"a","queue_weight":3}`, 3},
		{`{"id":"a","queue_weight":100}`, 100},
		{`{"id":"a","queue_weight":101}`, 100},
		{`{"id":"a","queue_weight":-4}`, 1},
	} {
		var a Account
		if err := json.Unmarshal([]byte(tc.json), &a); err != nil {
			t.Fatal(err)
		}
		if got := a.Weight(); got != tc.want {
			t.Errorf("%s: weight %d, want %d", tc.json, got, tc.want)
		}
	}
	for w, ok := range map[int]bool{0: false, 1: true, 100: true, 101: false, -1: false} {
		if ValidQueueWeight(w) != ok {
			t.Errorf("ValidQueueWeight(%d) = %v", w, !ok)
		}
	}
	// Weight 1 is left out of the wire form, so content without weights hashes as before.
	b, _ := json.Marshal(Account{ID: "a"})
	if string(b) != `{"id":"a","customer":"","residency":"","suspended":false,"models":null}` {
		t.Errorf("encoded %s", b)
	}
}
