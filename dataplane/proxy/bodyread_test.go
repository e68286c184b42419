package proxy

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// TestReadBlocks: bodies of unknown length up to the limit arrive whole, however they are
// read; one byte over fails; the budget is spent while reading and given back after.
func TestReadBlocks(t *testing.T) {
	const limit = 3<<20 + 5
	cases := []struct {
		size int
		ok   bool
	}{{0, true}, {1, true}, {blockMin - 1, true}, {blockMin, true}, {blockMin + 1, true},
		{blockMax + 7, true}, {limit, true}, {limit + 1, false}, {10 << 20, false}}
	for _, c := range cases {
		src := bytes.Repeat([]byte("0123456789abcdef"), c.size/16+1)[:c.size]
		for name, r := range map[string]io.Reader{
			"whole": bytes.NewReader(src), "bytewise": iotest.HalfReader(bytes.NewReader(src)),
		} {
			b := &bodyBudget{max: 64 << 20}
			blocks, err := readBlocks(nil, r, limit, b)
			var got []byte
			for _, blk := range blocks {
				got = append(got, *blk...)
				putBlock(blk)
			}
			if c.ok != (err == nil) || (err != nil && !errors.Is(err, ErrBodyTooLarge)) {
				t.Fatalf("%d bytes %s: err %v", c.size, name, err)
			}
			if c.ok && !bytes.Equal(got, src) {
				t.Fatalf("%d bytes %s: body differs (%d bytes)", c.size, name, len(got))
			}
			if h := b.held.Load(); h != 0 {
				t.Fatalf("%d bytes %s: %d budget bytes still held", c.size, name, h)
			}
		}
	}
	// A budget smaller than the body refuses it.
	b := &bodyBudget{max: 1 << 20}
	if _, err := readBlocks(nil, bytes.NewReader(make([]byte, 2<<20)), limit, b); !errors.Is(err, ErrBodyTooLarge) {
		t.Fatalf("over the budget: %v", err)
	}
	if _, err := readKnown(nil, bytes.NewReader(make([]byte, 10)), limit+1, limit, b); !errors.Is(err, ErrBodyTooLarge) {
		t.Fatalf("declared over the limit: %v", err)
	}
	if got, err := readKnown(nil, bytes.NewReader([]byte("hello")), 5, limit, b); err != nil || len(got) != 1 || string(*got[0]) != "hello" {
		t.Fatalf("declared: %v", err)
	}
}
