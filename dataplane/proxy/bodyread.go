package proxy

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/valyala/fasthttp"
)

// ErrBodyTooLarge is the error of a non-streaming answer longer than the upstream's limit
// (Config.MaxResponseBodySize), or than what the node's buffer budget
// (Config.MaxBufferedBytes) has left while others are being read. The upstream connection
// is closed, which ends the upstream's work.
var ErrBodyTooLarge = errors.New("proxy: upstream answer over the buffered body limit")

// Block sizes of a buffered body: the first block is small (most answers fit), later ones
// double up to blockMax.
const (
	blockMin = 16 << 10
	blockMax = 1 << 20
)

// blockPools hold the blocks of each size (blockMin doubling to blockMax), so that a body cut
// at its limit leaves no garbage behind and the next one reuses its blocks. A block is
// handled by pointer so that returning it allocates nothing.
var blockPools [blockClasses]sync.Pool

const blockClasses = 7 // 16 KiB .. 1 MiB

// blockClass is the class of the smallest block that holds size bytes.
func blockClass(size int) (int, bool) {
	for c, s := 0, blockMin; c < blockClasses; c, s = c+1, s*2 {
		if size <= s {
			return c, true
		}
	}
	return 0, false
}

// getBlock returns an empty block of capacity at least size: a pooled one up to blockMax.
func getBlock(size int) *[]byte {
	c, ok := blockClass(size)
	if !ok {
		b := make([]byte, 0, size)
		return &b
	}
	if b, _ := blockPools[c].Get().(*[]byte); b != nil {
		*b = (*b)[:0]
		return b
	}
	b := make([]byte, 0, blockMin<<c)
	return &b
}

// putBlock takes a block back; nothing may refer to its bytes any more.
func putBlock(b *[]byte) {
	if c, ok := blockClass(cap(*b)); ok && cap(*b) == blockMin<<c {
		blockPools[c].Put(b)
	}
}

// bodyBudget is the node's allowance of bytes held by non-streaming bodies being read.
type bodyBudget struct {
	max  int64 // 0: none
	held atomic.Int64
}

func (b *bodyBudget) take(n int) bool {
	if b.max <= 0 {
		return true
	}
	if b.held.Add(int64(n)) > b.max {
		b.held.Add(-int64(n))
		return false
	}
	return true
}

func (b *bodyBudget) give(n int) {
	if b.max > 0 && n > 0 {
		b.held.Add(-int64(n))
	}
}

// readBody reads a non-streaming answer (fetched with StreamBody) from its body stream into
// memory that never grows past limit: a declared length over it fails before any read,
// and a chunked or close-delimited body is read in blocks, each taken from the budget
// first. Over the limit, the connection is closed and ErrBodyTooLarge returned; otherwise
// the body is set on the response (a body of one pooled block copied into the response's
// own pooled buffer) and the connection returned to the pool.
func readBody(resp *fasthttp.Response, limit int, budget *bodyBudget) error {
	if !resp.IsBodyStream() {
		return nil // fasthttp read it already (no body)
	}
	blocks := make([]*[]byte, 0, 1)
	defer func() {
		for _, b := range blocks {
			putBlock(b)
		}
	}()
	var err error
	if cl := resp.Header.ContentLength(); cl >= 0 {
		blocks, err = readKnown(blocks, resp.BodyStream(), cl, limit, budget)
	} else {
		blocks, err = readBlocks(blocks, resp.BodyStream(), limit, budget)
	}
	if err != nil {
		resp.SetConnectionClose()
		_ = resp.CloseBodyStream()
		return err
	}
	if cerr := resp.CloseBodyStream(); cerr != nil {
		return cerr
	}
	if len(blocks) == 1 && cap(*blocks[0]) <= blockMax {
		resp.SetBody(*blocks[0]) // copied; the block goes back to its pool
		return nil
	}
	// A block past the pools' sizes, or several: one buffer of the body's size, which the
	// response keeps (a large body is not copied twice).
	resp.SetBodyRaw(joined(blocks))
	return nil
}

// joined is the bytes of blocks in one buffer of their size: the only block's own when it
// is not pooled.
func joined(blocks []*[]byte) []byte {
	if len(blocks) == 1 {
		return *blocks[0] // not pooled: putBlock leaves it
	}
	n := 0
	for _, b := range blocks {
		n += len(*b)
	}
	out := make([]byte, 0, n)
	for _, b := range blocks {
		out = append(out, *b...)
	}
	return out
}

// readKnown reads a body of declared length n into a block appended to blocks.
func readKnown(blocks []*[]byte, r io.Reader, n, limit int, budget *bodyBudget) ([]*[]byte, error) {
	if n > limit {
		return blocks, fmt.Errorf("%w: declared %d bytes, limit %d", ErrBodyTooLarge, n, limit)
	}
	if !budget.take(n) {
		return blocks, fmt.Errorf("%w: node buffer budget spent", ErrBodyTooLarge)
	}
	defer budget.give(n)
	b := getBlock(n)
	blocks = append(blocks, b)
	*b = (*b)[:n]
	if _, err := io.ReadFull(r, *b); err != nil {
		return blocks, fmt.Errorf("proxy: read upstream body: %w", err)
	}
	return blocks, nil
}

// readBlocks reads a body of unknown length into blocks appended to blocks.
func readBlocks(blocks []*[]byte, r io.Reader, limit int, budget *bodyBudget) ([]*[]byte, error) {
	held, total := 0, 0
	end := 0 // the bytes the last block may hold: what was taken from the budget for it
	defer func() { budget.give(held) }()
	for {
		if end == 0 || len(*blocks[len(blocks)-1]) == end {
			if total >= limit+1 {
				return blocks, fmt.Errorf("%w: over %d bytes", ErrBodyTooLarge, limit)
			}
			size := blockMin
			if end > 0 {
				size = min(2*end, blockMax)
			}
			size = min(size, limit+1-total) // one byte past the limit tells it was passed
			if !budget.take(size) {
				return blocks, fmt.Errorf("%w: node buffer budget spent", ErrBodyTooLarge)
			}
			held, end = held+size, size
			blocks = append(blocks, getBlock(size))
		}
		last := blocks[len(blocks)-1]
		n, err := r.Read((*last)[len(*last):end])
		*last = (*last)[:len(*last)+n]
		total += n
		if total > limit {
			return blocks, fmt.Errorf("%w: over %d bytes", ErrBodyTooLarge, limit)
		}
		if errors.Is(err, io.EOF) {
			return blocks, nil
		}
		if err != nil {
			return blocks, fmt.Errorf("proxy: read upstream body: %w", err)
		}
	}
}
