package meter

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// readUnsent calls fn with up to max durable (fsynced) records not yet handed to the sender, in
// spool order, and returns the spans they came from. The payload passed to fn is only
// valid during the call.
// segReaders are the buffered readers readUnsent reads segments with (64 KiB each; one per
// batch read would be most of what a node allocates besides its requests).
var segReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

func (s *spool) readUnsent(max int, fn func(payload []byte)) ([]span, error) {
	var spans []span
	var buf []byte
	for max > 0 {
		s.mu.Lock()
		var seg *segment
		for _, sg := range s.segs {
			if sg.read < sg.total {
				seg = sg
				break
			}
		}
		if seg == nil {
			s.mu.Unlock()
			break
		}
		if seg.r == nil {
			f, err := os.Open(seg.path)
			if err != nil {
				s.mu.Unlock()
				return spans, fmt.Errorf("open segment %d: %w", seg.id, err)
			}
			seg.r = f
		}
		r, off, end, want := seg.r, seg.readOff, seg.durable, min(max, seg.total-seg.read)
		s.mu.Unlock()

		br := segReaders.Get().(*bufio.Reader)
		br.Reset(io.NewSectionReader(r, off, end-off))
		n, consumed := 0, int64(0)
		var rerr error
		for n < want {
			p, size, err := readFrame(br, &buf)
			if err != nil {
				rerr = err
				break
			}
			fn(p)
			n++
			consumed += size
		}
		br.Reset(nil)
		segReaders.Put(br)
		// A corrupt frame in the durable region: the frames after it are found by scanning
		// (scanFrames) and read; only the damaged bytes are lost.
		remaining, salvaged := 0, false
		if rerr != nil && errors.Is(rerr, errCorrupt) {
			data := make([]byte, end-off-consumed)
			if _, err := r.ReadAt(data, off+consumed); err == nil || errors.Is(err, io.EOF) {
				found, passed, last := 0, 0, 0
				_, skipped := scanFrames(data, func(p []byte, fend int) {
					found++
					if n+passed < want {
						fn(p)
						passed++
						last = fend
					}
				})
				n += passed
				remaining = found - passed
				if remaining == 0 {
					consumed += int64(len(data))
				} else {
					consumed += int64(last)
				}
				salvaged = true
				s.log.Warn("spool: corrupt bytes in a segment skipped; the frames after them are kept",
					"segment", seg.id, "skipped_bytes", skipped, "frames_after", found, "err", rerr)
			}
		}
		s.mu.Lock()
		seg.readOff += consumed
		seg.read += n
		s.unread -= n
		if salvaged {
			// Records counted when written but not found again are gone.
			if lost := seg.total - seg.read - remaining; lost > 0 {
				s.log.Error("spool: durable records unreadable; they are lost", "segment", seg.id,
					"records", lost, "err", rerr)
				seg.total -= lost
				s.unread -= lost
				s.records -= int64(lost)
				s.pending.Add(-int64(lost))
				popGroups(&seg.groups, lost, true)
			}
		} else if rerr != nil {
			// Frames that were durable no longer read back: the disk lost them. Nothing can
			// bring them back; count them as gone so the spool does not wedge on them.
			lost := seg.total - seg.read
			s.log.Error("spool: durable records unreadable; they are lost", "segment", seg.id,
				"records", lost, "err", rerr)
			seg.total = seg.read
			s.unread -= lost
			s.records -= int64(lost)
			s.pending.Add(-int64(lost))
			popGroups(&seg.groups, lost, true)
			// Nothing more is read from this file: records written to it but not yet
			// synced are written again into a new segment (a running fsync does it when
			// it finishes).
			seg.lost = true
			if !seg.syncing {
				s.requeueLocked(seg)
			}
			s.sealLocked(seg)
		}
		s.mu.Unlock()
		if n > 0 {
			spans = append(spans, span{seg: seg, n: n})
		}
		max -= n
	}
	return spans, nil
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
