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
// at its limit leaves no garbage behind and the next one reuses its blocks.
var blockPools [blockClasses]sync.Pool

const blockClasses = 7 // 16 KiB .. 1 MiB

func blockClass(size int) (int, bool) {
	for c, s := 0, blockMin; c < blockClasses; c, s = c+1, s*2 {
		if s == size {
			return c, true
		}
	}
	return 0, false
}

func getBlock(size int) []byte {
	if c, ok := blockClass(size); ok {
		if b, _ := blockPools[c].Get().(*[]byte); b != nil {
			return (*b)[:0]
		}
	}
	return make([]byte, 0, size)
}

func putBlock(b []byte) {
	if c, ok := blockClass(cap(b)); ok {
		b = b[:cap(b)]
		blockPools[c].Put(&b)
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
// the body is set on resp and the connection returned to the pool.
func readBody(resp *fasthttp.Response, limit int, budget *bodyBudget) error {
	if !resp.IsBodyStream() {
		return nil // fasthttp read it already (no body)
	}
	var body []byte
	var err error
	if cl := resp.Header.ContentLength(); cl >= 0 {
		body, err = readKnown(resp.BodyStream(), cl, limit, budget)
	} else {
		body, err = readBlocks(resp.BodyStream(), limit, budget)
	}
	if err != nil {
		resp.SetConnectionClose()
		_ = resp.CloseBodyStream()
		return err
	}
	if cerr := resp.CloseBodyStream(); cerr != nil {
		return cerr
	}
	resp.SetBodyRaw(body)
	return nil
}

// readKnown reads a body of declared length n.
func readKnown(r io.Reader, n, limit int, budget *bodyBudget) ([]byte, error) {
	if n > limit {
		return nil, fmt.Errorf("%w: declared %d bytes, limit %d", ErrBodyTooLarge, n, limit)
	}
	if !budget.take(n) {
		return nil, fmt.Errorf("%w: node buffer budget spent", ErrBodyTooLarge)
	}
	defer budget.give(n)
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("proxy: read upstream body: %w", err)
	}
	return b, nil
}

// readBlocks reads a body of unknown length in blocks and joins them at its end.
func readBlocks(r io.Reader, limit int, budget *bodyBudget) ([]byte, error) {
	var blocks [][]byte
	held, total := 0, 0
	defer func() {
		for _, b := range blocks {
			putBlock(b)
		}
		budget.give(held)
	}()
	for {
		if len(blocks) == 0 || len(blocks[len(blocks)-1]) == cap(blocks[len(blocks)-1]) {
			if total >= limit+1 {
				return nil, fmt.Errorf("%w: over %d bytes", ErrBodyTooLarge, limit)
			}
			size := blockMin
			if len(blocks) > 0 {
				size = min(2*cap(blocks[len(blocks)-1]), blockMax)
			}
			size = min(size, limit+1-total) // one byte past the limit tells it was passed
			if !budget.take(size) {
				return nil, fmt.Errorf("%w: node buffer budget spent", ErrBodyTooLarge)
			}
			held += size
			blocks = append(blocks, getBlock(size))
		}
		last := &blocks[len(blocks)-1]
		n, err := r.Read((*last)[len(*last):cap(*last)])
		*last = (*last)[:len(*last)+n]
		total += n
		if total > limit {
			return nil, fmt.Errorf("%w: over %d bytes", ErrBodyTooLarge, limit)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("proxy: read upstream body: %w", err)
		}
	}
	if len(blocks) == 1 {
		b := blocks[0]
		blocks = nil // the answer keeps it; it does not go back to its pool
		return b, nil
	}
	out := make([]byte, 0, total)
	for _, b := range blocks {
		out = append(out, b...)
	}
	return out, nil
}
