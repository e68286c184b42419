package meter

import (
	"fmt"
	"os"
	"time"
)

// enqueue queues a framed record for the writer. It reports false after close.
func (s *spool) enqueue(payload []byte) bool {
	s.qmu.Lock()
	if s.qclosed {
		s.qmu.Unlock()
		return false
	}
	if s.qn == 0 {
		s.qfirst = s.now()
	}
	s.qbuf = appendFrame(s.qbuf, payload)
	s.qn++
	s.qseq++
	s.pending.Add(1)
	s.qmu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return true
}

// take removes everything queued. The caller gives buf back with giveBack.
func (s *spool) take() (buf []byte, n int, first time.Time, seq uint64) {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	buf, n, first, seq = s.qbuf, s.qn, s.qfirst, s.qseq
	s.qbuf, s.qspare, s.qn = s.qspare[:0], nil, 0
	if n > 0 {
		s.tfirst = first
	}
	return buf, n, first, seq
}

// giveBack returns a written buffer for reuse, or requeues an unwritten one in front of
// whatever arrived since.
func (s *spool) giveBack(buf []byte, n int, first time.Time, written bool) {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	s.tfirst = time.Time{}
	if written {
		if cap(buf) <= 4<<20 {
			s.qspare = buf[:0]
		}
		return
	}
	s.qbuf = append(buf, s.qbuf...)
	if n > 0 {
		s.qfirst = first
	}
	s.qn += n
}

func (s *spool) queued() (n int, first time.Time) {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	return s.qn, s.qfirst
}

// oldestInMemory returns the arrival time of the oldest record not yet durable.
func (s *spool) oldestInMemory() time.Time {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	if !s.tfirst.IsZero() {
		return s.tfirst
	}
	if s.qn > 0 {
		return s.qfirst
	}
	return time.Time{}
}

// writeLoop is the single writer: it groups queued records, appends and fsyncs them.
func (s *spool) writeLoop() {
	defer close(s.done)
	retry := time.Duration(0)
	for {
		var retryT *time.Timer
		var retryC <-chan time.Time
		if retry > 0 {
			retryT = time.NewTimer(retry)
			retryC = retryT.C
		}
		select {
		case <-s.stop:
			if err := s.flushQueue(); err != nil {
				s.log.Error("spool: final write failed; queued records are lost", "err", err)
			}
			return
		case <-s.wake:
		case <-retryC:
		}
		if retryT != nil {
			retryT.Stop()
		}
		if _, first := s.queued(); s.window > 0 && !first.IsZero() {
			if d := first.Add(s.window).Sub(s.now()); d > 0 {
				select {
				case <-time.After(d):
				case <-s.stop:
				}
			}
		}
		if err := s.flushQueue(); err != nil {
			retry = min(max(2*retry, 50*time.Millisecond), 5*time.Second)
			s.log.Error("spool write failed; will retry", "err", err, "retry_in", retry)
			continue
		}
		retry = 0
	}
}

// flushQueue writes everything queued to the active segment with one fsync.
func (s *spool) flushQueue() error {
	buf, n, first, seq := s.take()
	if n == 0 {
		s.giveBack(buf, 0, first, true)
		return nil
	}
	err := s.writeDurable(buf, n, first, seq)
	s.giveBack(buf, n, first, err == nil)
	s.mu.Lock()
	s.werr = err
	s.mu.Unlock()
	return err
}

func (s *spool) writeDurable(buf []byte, n int, first time.Time, seq uint64) error {
	s.mu.Lock()
	seg := s.active
	if seg == nil {
		var err error
		if seg, err = s.createSegmentLocked(); err != nil {
			s.mu.Unlock()
			return err
		}
	}
	seg.writing = true
	off := seg.durable
	s.mu.Unlock()

	_, err := seg.w.Write(buf)
	if err == nil {
		err = seg.w.Sync()
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	seg.writing = false
	if err != nil {
		// The tail of this segment is suspect: seal it at the last durable frame so later
		// records never follow garbage, and write the records again into a new segment.
		_ = seg.w.Truncate(off)
		s.sealLocked(seg)
		s.gcLocked()
		return fmt.Errorf("append to segment %d: %w", seg.id, err)
	}
	seg.durable += int64(len(buf))
	seg.total += n
	seg.groups = append(seg.groups, group{n: n, t: first})
	s.records += int64(n)
	s.unread += n
	s.bytes += int64(len(buf))
	s.durSeq = seq
	if s.onSync != nil {
		s.onSync()
	}
	if seg.durable >= s.segBytes {
		s.sealLocked(seg)
	}
	select {
	case s.avail <- struct{}{}:
	default:
	}
	return nil
}

func (s *spool) createSegmentLocked() (*segment, error) {
	id := s.nextID
	path := s.segPath(id)
	f, err := s.createFile(path)
	if err != nil {
		return nil, fmt.Errorf("create segment %d: %w", id, err)
	}
	if err := syncDir(s.dir); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("create segment %d: %w", id, err)
	}
	s.nextID++
	seg := &segment{id: id, path: path, w: f}
	s.segs = append(s.segs, seg)
	s.active = seg
	return seg, nil
}

func (s *spool) sealLocked(seg *segment) {
	if seg.w != nil {
		if err := seg.w.Close(); err != nil {
			s.log.Warn("spool: close segment", "segment", seg.id, "err", err)
		}
		seg.w = nil
	}
	seg.sealed = true
	if s.active == seg {
		s.active = nil
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
