package meter

import (
	"bufio"
	"bytes"
	"errors"
	"testing"
)

func TestReadFrame(t *testing.T) {
	a := []byte(`{"request_id":"a"}`)
	b := []byte(`{"request_id":"bb","price_micro_sek":3}`)
	two := appendFrame(appendFrame(nil, a), b)
	tests := []struct {
		name      string
		data      []byte
		wantN     int
		wantValid int
		wantErr   error
	}{
		{"empty", nil, 0, 0, nil},
		{"two frames", two, 2, len(two), nil},
		{"torn header", two[:len(two)-len(b)-3], 1, len(two) - len(b) - frameHeader, errTorn},
		{"torn payload", two[:len(two)-1], 1, len(two) - len(b) - frameHeader, errTorn},
		{"flipped bit", func() []byte { c := bytes.Clone(two); c[len(c)-2] ^= 1; return c }(), 1, len(two) - len(b) - frameHeader, errCorrupt},
		{"zero length", append(bytes.Clone(two), make([]byte, 16)...), 2, len(two), errCorrupt},
		{"non-JSON payload", appendFrame(bytes.Clone(two), []byte("hello")), 2, len(two), errCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, valid, err := decodeSegment(bufio.NewReader(bytes.NewReader(tt.data)), func([]byte) {})
			if n != tt.wantN || valid != int64(tt.wantValid) || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("decode = %d records, %d valid bytes, %v; want %d, %d, %v", n, valid, err, tt.wantN, tt.wantValid, tt.wantErr)
			}
		})
	}
}

// FuzzDecodeSegment feeds arbitrary bytes (what a crash may leave on disk) to the spool's
// decoder: it must never panic, must report a valid prefix that re-encodes to exactly the
// same bytes, and must hand out only JSON objects.
func FuzzDecodeSegment(f *testing.F) {
	a := appendFrame(nil, []byte(`{"request_id":"a","account_id":"x","price_micro_sek":1}`))
	two := appendFrame(bytes.Clone(a), []byte(`{"k":[1,2,{"z":null}]}`))
	f.Add([]byte{})
	f.Add(a)
	f.Add(two)
	f.Add(two[:len(two)-4])
	f.Add(append(bytes.Clone(a), 0, 0, 0, 0, 0, 0, 0, 0))
	f.Add(append(bytes.Clone(a), 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4))
	f.Add(appendFrame(nil, []byte("{")))
	f.Fuzz(func(t *testing.T, data []byte) {
		var re []byte
		n, valid, err := decodeSegment(bufio.NewReader(bytes.NewReader(data)), func(p []byte) {
			if !validRecordJSON(p) {
				t.Fatalf("decoder handed out a non-JSON payload %q", p)
			}
			re = appendFrame(re, p)
		})
		if valid < 0 || valid > int64(len(data)) {
			t.Fatalf("valid prefix %d outside 0..%d", valid, len(data))
		}
		if !bytes.Equal(re, data[:valid]) {
			t.Fatalf("%d decoded records re-encode to %d bytes, valid prefix is %d", n, len(re), valid)
		}
		if err == nil && valid != int64(len(data)) {
			t.Fatalf("no error but only %d of %d bytes consumed", valid, len(data))
		}
		if err != nil && !errors.Is(err, errTorn) && !errors.Is(err, errCorrupt) {
			t.Fatalf("unexpected error class: %v", err)
		}
	})
}
