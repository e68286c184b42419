package reqbody

import "testing"

// TestBodyBufPoolKeepsLargeBuffers: however many small or empty buffers came back before
// (the bodies fasthttp reads itself leave theirs empty), a 64 KiB body buffer is kept and
// reused, so reading another 64 KiB body allocates nothing; a buffer over MaxPooled is
// not kept. (bytebufferpool's calibration dropped the 64 KiB buffers after about 42,000
// small ones.)
func TestBodyBufPoolKeepsLargeBuffers(t *testing.T) {
	var p Pool
	for range 100_000 {
		p.Put(p.Get())
	}
	const size = 64 << 10
	fill := func() {
		b := p.Get()
		if cap(*b) < size {
			*b = make([]byte, 0, size)
		}
		*b = append(*b, make([]byte, size)...) // stack-sized source: no allocation of its own
		p.Put(b)
	}
	fill()
	if n := testing.AllocsPerRun(100, fill); n != 0 {
		t.Fatalf("reading 64 KiB bodies through the pool allocated %.1f times per body", n)
	}
	big := p.Get()
	*big = make([]byte, MaxPooled+1)
	p.Put(big)
	if b := p.Get(); cap(*b) > MaxPooled {
		t.Fatalf("a %d-byte buffer was kept", cap(*b))
	}
}
