package meter

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// segReaders are the buffered readers readUnsent reads segments with (64 KiB each; one per
// batch read would be most of what a node allocates besides its requests).
var segReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

// readUnsent calls fn with up to max durable (fsynced) records not yet handed to the
// sender, in spool order, and returns the spans they came from. The payload passed to fn is
// only valid during the call.
func (s *spool) readUnsent(max int, fn func(payload []byte)) ([]span, error) {
	var spans []span
	var buf []byte
	for max > 0 {
		s.mu.Lock()
		seg, err := s.unreadSegmentLocked()
		if seg == nil || err != nil {
			s.mu.Unlock()
			return spans, err
		}
		r, off, end, want := seg.r, seg.readOff, seg.durable, min(max, seg.total-seg.read)
		s.mu.Unlock()

		rd := readFrames(r, off, end, want, &buf, fn)
		if rd.err != nil && errors.Is(rd.err, errCorrupt) {
			s.salvage(seg, r, off, end, want, &rd, fn)
		}
		s.mu.Lock()
		s.countReadLocked(seg, rd)
		s.mu.Unlock()
		if rd.n > 0 {
			spans = append(spans, span{seg: seg, n: rd.n})
		}
		max -= rd.n
	}
	return spans, nil
}

// unreadSegmentLocked is the first segment with records not yet read, its file open (nil:
// none); the caller holds s.mu.
func (s *spool) unreadSegmentLocked() (*segment, error) {
	for _, seg := range s.segs {
		if seg.read >= seg.total {
			continue
		}
		if seg.r == nil {
			f, err := os.Open(seg.path)
			if err != nil {
				return nil, fmt.Errorf("open segment %d: %w", seg.id, err)
			}
			seg.r = f
		}
		return seg, nil
	}
	return nil, nil
}

// segRead is what one read of a segment's durable region came to.
type segRead struct {
	n        int   // records passed to fn
	consumed int64 // bytes read past, from the read offset
	err      error // why the read stopped before want records
	// salvaged: a corrupt frame was skipped by scanning; remaining frames were found after
	// it but not passed (want was reached).
	salvaged  bool
	remaining int
}

// readFrames passes up to want frames of r's bytes [off, end) to fn.
func readFrames(r io.ReaderAt, off, end int64, want int, buf *[]byte, fn func([]byte)) segRead {
	br := segReaders.Get().(*bufio.Reader)
	br.Reset(io.NewSectionReader(r, off, end-off))
	var rd segRead
	for rd.n < want {
		p, size, err := readFrame(br, buf)
		if err != nil {
			rd.err = err
			break
		}
		fn(p)
		rd.n++
		rd.consumed += size
	}
	br.Reset(nil)
	segReaders.Put(br)
	return rd
}

// salvage reads past a corrupt frame in the durable region: the frames after it are found
// by scanning (scanFrames) and read; only the damaged bytes are lost.
func (s *spool) salvage(seg *segment, r io.ReaderAt, off, end int64, want int, rd *segRead, fn func([]byte)) {
	data := make([]byte, end-off-rd.consumed)
	if _, err := r.ReadAt(data, off+rd.consumed); err != nil && !errors.Is(err, io.EOF) {
		return
	}
	found, passed, last := 0, 0, 0
	_, skipped := scanFrames(data, func(p []byte, fend int) {
		found++
		if rd.n+passed < want {
			fn(p)
			passed++
			last = fend
		}
	})
	rd.n += passed
	rd.remaining = found - passed
	if rd.remaining == 0 {
		rd.consumed += int64(len(data))
	} else {
		rd.consumed += int64(last)
	}
	rd.salvaged = true
	s.log.Warn("spool: corrupt bytes in a segment skipped; the frames after them are kept",
		"segment", seg.id, "skipped_bytes", skipped, "frames_after", found, "err", rd.err)
}

// countReadLocked advances seg past what rd read and counts as gone the durable records
// that no longer read back; the caller holds s.mu.
func (s *spool) countReadLocked(seg *segment, rd segRead) {
	seg.readOff += rd.consumed
	seg.read += rd.n
	s.unread -= rd.n
	switch {
	case rd.salvaged:
		// Records counted when written but not found again are gone.
		if lost := seg.total - seg.read - rd.remaining; lost > 0 {
			s.log.Error("spool: durable records unreadable; they are lost", "segment", seg.id,
				"records", lost, "err", rd.err)
			seg.total -= lost
			s.dropLocked(seg, lost)
		}
	case rd.err != nil:
		// Frames that were durable no longer read back: the disk lost them. Nothing can
		// bring them back; count them as gone so the spool does not wedge on them.
		lost := seg.total - seg.read
		s.log.Error("spool: durable records unreadable; they are lost", "segment", seg.id,
			"records", lost, "err", rd.err)
		seg.total = seg.read
		s.dropLocked(seg, lost)
		// Nothing more is read from this file: records written to it but not yet synced
		// are written again into a new segment (a running fsync does it when it finishes).
		seg.lost = true
		if !seg.syncing {
			s.requeueLocked(seg)
		}
		s.sealLocked(seg)
	}
}

// dropLocked counts lost records of seg out of the spool's figures.
func (s *spool) dropLocked(seg *segment, lost int) {
	s.unread -= lost
	s.records -= int64(lost)
	s.pending.Add(-int64(lost))
	popGroups(&seg.groups, lost, true)
}

// popGroups removes n records from the front (or, with fromBack, the back) of groups.
func popGroups(gs *[]group, n int, fromBack bool) {
	g := *gs
	for n > 0 && len(g) > 0 {
		i := 0
		if fromBack {
			i = len(g) - 1
		}
		if g[i].n > n {
			g[i].n -= n
			break
		}
		n -= g[i].n
		if fromBack {
			g = g[:i]
		} else {
			g = g[1:]
		}
	}
	*gs = g
}

// confirm marks the records of spans confirmed and deletes segments that are done.
func (s *spool) confirm(spans []span) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sp := range spans {
		sp.seg.confirmed += sp.n
		s.records -= int64(sp.n)
		s.pending.Add(-int64(sp.n))
		popGroups(&sp.seg.groups, sp.n, false)
	}
	s.gcLocked()
}

// gcLocked deletes segments whose records are all confirmed. Only fsynced records are
// ever sent, so a segment still holding unsynced records (or being fsynced) is kept. The
// active segment goes too when it has nothing unsynced; the next write starts a new one.
func (s *spool) gcLocked() {
	keep := s.segs[:0]
	for _, seg := range s.segs {
		done := seg.confirmed == seg.total && seg.unsyncedN == 0 && !seg.syncing && (seg.sealed || seg.total > 0)
		if !done {
			keep = append(keep, seg)
			continue
		}
		s.sealLocked(seg)
		if seg.r != nil {
			seg.r.Close()
			seg.r = nil
		}
		if err := os.Remove(seg.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("spool: remove confirmed segment", "segment", seg.id, "err", err)
		}
		s.bytes -= seg.written
	}
	clear(s.segs[len(keep):])
	s.segs = keep
}

func (s *spool) unreadCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unread
}
