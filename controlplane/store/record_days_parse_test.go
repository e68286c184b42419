package store

import "testing"

func TestParseRangeBoundAndHolds(t *testing.T) {
	var parts recordParts
	for _, tc := range []struct {
		in   string
		want recordPart
		bad  bool
	}{
		{in: "FOR VALUES FROM (MINVALUE) TO ('req_01KW0000000000000000000000')", want: recordPart{noLo: true, hi: "req_01KW0000000000000000000000"}},
		{in: "FOR VALUES FROM ('req_01KW0000000000000000000000') TO ('req_01KX0000000000000000000000')", want: recordPart{lo: "req_01KW0000000000000000000000", hi: "req_01KX0000000000000000000000"}},
		{in: "FOR VALUES FROM ('req_8') TO (MAXVALUE)", want: recordPart{lo: "req_8", noHi: true}},
		{in: "FOR VALUES FROM ('it''s') TO ('z')", want: recordPart{lo: "it's", hi: "z"}},
		{in: "DEFAULT", bad: true},
		{in: "FOR VALUES FROM ('a) TO ('b')", bad: true},
		{in: "FOR VALUES FROM ('a') TO ('b'", bad: true},
		{in: "FOR VALUES FROM (1) TO (2)", bad: true},
		{in: "FOR VALUES IN ('a')", bad: true},
	} {
		got, err := parseRangeBound(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: parsed as %+v", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v %v, want %+v", tc.in, got, err, tc.want)
		}
		if tc.want.lo != "it's" {
			parts = append(parts, got)
		}
	}
	for id, want := range map[string]bool{
		"": true, "abc": true, "req_01KV": true, // low
		"req_01KW0000000000000000000000": true, "req_01KWZZZ": true, // the day
		"req_01KX0000000000000000000000": false, "req_1": false, "req_7ZZ": false, // no day
		"req_8": true, "x": true, "req_zz": true, // high
	} {
		if got := parts.holds(id); got != want {
			t.Errorf("holds(%q) = %v, want %v", id, got, want)
		}
	}
	if (recordParts{}).holds("a") {
		t.Error("no partitions hold an ID")
	}
}
