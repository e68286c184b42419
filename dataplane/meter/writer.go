package meter

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// segFile is the append handle of a segment; *os.File in production, a fault injector in
// tests.
type segFile interface {
	Write(p []byte) (int, error)
	Sync() error
	Truncate(size int64) error
	Close() error
}

// maxSpareBuf is the largest buffer kept for reuse after it was written or synced.
const maxSpareBuf = 4 << 20

// append frames payload and writes it to the active segment before returning (through the
// segment's mapping, see mappedFile), so the record survives the death of the process; the
// fsync follows in the background. When
// the spool cannot be written (or records wait in memory after an earlier failure), the
// frame is queued in memory for the syncer to write. It reports false after close.
func (s *spool) append(payload []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queueClosed {
		return false
	}
	s.seq++
	s.pending.Add(1)
	if s.queueLen == 0 { // records queued after a failure go first: keep spool order
		seg, err := s.activeLocked()
		if err == nil {
			start := len(seg.unsyncedBuf)
			seg.unsyncedBuf = appendFrame(seg.unsyncedBuf, payload)
			if err = s.commitLocked(seg, start, 1, s.seq, time.Time{}); err == nil {
				return true
			}
		}
		s.writeErr = err
		s.log.Error("spool write failed; record kept in memory until the disk recovers", "err", err)
	}
	if s.queueLen == 0 {
		s.queueSince, s.queueSeq = s.now(), s.seq
	}
	s.queue = appendFrame(s.queue, payload)
	s.queueLen++
	s.signal(s.wake)
	return true
}

// activeLocked returns the segment records are appended to, creating one when needed.
func (s *spool) activeLocked() (*segment, error) {
	if s.active != nil {
		return s.active, nil
	}
	id := s.nextID
	path := s.segPath(id)
	f, err := s.createFile(path)
	if err != nil {
		return nil, fmt.Errorf("create segment %d: %w", id, err)
	}
	s.nextID++
	// The directory entry is fsynced by the syncer before the segment's first data.
	seg := &segment{id: id, path: path, w: f, unsyncedBuf: s.spare}
	s.spare = nil
	if seg.unsyncedBuf == nil && s.lastCap > 0 {
		// The previous segment's buffer is still in use until its fsync: start at its
		// size rather than growing from nothing on the hot path.
		seg.unsyncedBuf = make([]byte, 0, s.lastCap)
	}
	s.segs = append(s.segs, seg)
	s.active = seg
	return seg, nil
}

// commitLocked writes seg.pend[start:], which holds n new frames (the first with sequence
// seq, arrived at t; zero t means now), to seg with one write. On failure the file is cut
// back to its last good frame and sealed, so later records never follow a torn frame, and
// the frames are removed from seg.pend.
func (s *spool) commitLocked(seg *segment, start, n int, seq uint64, t time.Time) error {
	buf := seg.unsyncedBuf[start:]
	w, err := seg.w.Write(buf)
	if err == nil && w != len(buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		seg.unsyncedBuf = seg.unsyncedBuf[:start]
		if w > 0 {
			if terr := seg.w.Truncate(seg.written); terr != nil {
				s.log.Error("spool: cut torn write", "segment", seg.id, "err", terr)
			}
		}
		s.sealLocked(seg)
		s.gcLocked()
		return fmt.Errorf("append to segment %d: %w", seg.id, err)
	}
	size := int64(len(buf))
	seg.written += size
	s.bytes += size
	if (seg.unsyncedN == 0 || (seg.syncing && seg.lateN == 0)) && t.IsZero() {
		t = s.now()
	}
	// Frames drained from the queue may carry older sequences than those already
	// appended (records requeued after a failed fsync): keep the smallest.
	if seg.unsyncedN == 0 {
		seg.unsyncedSeq, seg.unsyncedSince = seq, t
	} else {
		seg.unsyncedSeq = min(seg.unsyncedSeq, seq)
	}
	seg.unsyncedN += n
	if seg.syncing {
		if seg.lateN == 0 {
			seg.lateSeq, seg.lateSince = seq, t
		} else {
			seg.lateSeq = min(seg.lateSeq, seq)
		}
		seg.lateN += n
	}
	if seg.written >= s.segBytes {
		s.lastCap = min(cap(seg.unsyncedBuf), maxSpareBuf)
		s.sealLocked(seg)
	}
	s.signal(s.wake)
	return nil
}

func (s *spool) signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// oldestUnsynced returns the arrival time of the oldest record not yet fsynced, or zero.
func (s *spool) oldestUnsynced() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.oldestUnsyncedLocked()
}

func (s *spool) oldestUnsyncedLocked() time.Time {
	var t time.Time
	older := func(u time.Time) {
		if !u.IsZero() && (t.IsZero() || u.Before(t)) {
			t = u
		}
	}
	if s.queueLen > 0 {
		older(s.queueSince)
	}
	for _, seg := range s.segs {
		if seg.unsyncedN > 0 {
			older(seg.unsyncedSince)
		}
	}
	return t
}

// writeLoop is the syncer: it waits FsyncWindow after the oldest unsynced record arrived,
// writes records queued after a write failure, and fsyncs every segment with unsynced
// records, one fsync per segment for the whole group.
func (s *spool) writeLoop() {
	defer close(s.done)
	retry := time.Duration(0)
	for {
		if retry > 0 {
			// After a failure wait out the backoff; new records only queue up meanwhile,
			// and Flush does not cut it short (it would hammer a failing disk).
			t := time.NewTimer(retry)
			select {
			case <-s.stop:
				t.Stop()
				s.final()
				return
			case <-t.C:
			}
		} else {
			select {
			case <-s.stop:
				s.final()
				return
			case <-s.wake:
			case <-s.hurry:
			}
		}
		if first := s.oldestUnsynced(); s.window > 0 && !first.IsZero() {
			if d := first.Add(s.window).Sub(s.now()); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-s.hurry:
				case <-s.stop:
				}
				t.Stop()
			}
		}
		if s.killed.Load() {
			continue // the stop case returns without more work
		}
		did, err := s.writeAndSync()
		if err != nil {
			retry = min(max(2*retry, 50*time.Millisecond), 5*time.Second)
			s.log.Error("spool write failed; will retry", "err", err, "retry_in", retry)
			continue
		}
		retry = 0
		if did {
			s.mu.Lock()
			s.writeErr = nil
			s.mu.Unlock()
		}
	}
}

// final writes and syncs what is left when the spool closes; after abandon it does nothing.
func (s *spool) final() {
	if s.killed.Load() {
		return
	}
	if _, err := s.writeAndSync(); err != nil {
		s.log.Error("spool: final write failed; records not yet durable may be lost", "err", err)
	}
}

// writeAndSync writes the queued records and fsyncs what is unsynced. It reports whether
// there was anything to do.
func (s *spool) writeAndSync() (bool, error) {
	wrote, werr := s.writeQueue()
	synced, serr := s.syncAll()
	err := errors.Join(werr, serr)
	if err != nil {
		s.mu.Lock()
		s.writeErr = err
		s.mu.Unlock()
	}
	return wrote || synced, err
}

// writeQueue writes the records queued in memory to the active segment with one write.
func (s *spool) writeQueue() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queueLen == 0 {
		return false, nil
	}
	seg, err := s.activeLocked()
	if err != nil {
		return false, err
	}
	start := len(seg.unsyncedBuf)
	seg.unsyncedBuf = append(seg.unsyncedBuf, s.queue...)
	if err := s.commitLocked(seg, start, s.queueLen, s.queueSeq, s.queueSince); err != nil {
		return false, err
	}
	if cap(s.queue) > maxSpareBuf {
		s.queue = nil
	}
	s.queue, s.queueLen, s.queueSince, s.queueSeq = s.queue[:0], 0, time.Time{}, 0
	return true, nil
}

type syncJob struct {
	seg *segment
	w   segFile
}

// syncAll fsyncs every segment holding unsynced records (and, for a new segment, the spool
// directory first). Records keep being written while it runs; those written after it
// started wait for the next round.
func (s *spool) syncAll() (bool, error) {
	s.mu.Lock()
	todo := s.syncJobs[:0]
	for _, seg := range s.segs {
		if seg.unsyncedN > 0 && !seg.syncing && seg.w != nil {
			seg.syncing, seg.target, seg.lateN = true, seg.written, 0
			todo = append(todo, syncJob{seg, seg.w})
		}
	}
	s.mu.Unlock()
	defer func() { clear(todo); s.syncJobs = todo[:0] }() // only the syncer uses syncJobs

	var errs []error
	synced := false
	for _, j := range todo {
		var err error
		if !j.seg.dirSynced { // only the syncer reads or sets dirSynced after creation
			if err = syncDir(s.dir); err != nil {
				err = fmt.Errorf("sync spool dir for segment %d: %w", j.seg.id, err)
			}
		}
		if err == nil {
			if err = j.w.Sync(); err != nil {
				err = fmt.Errorf("fsync segment %d: %w", j.seg.id, err)
			}
		}
		s.mu.Lock()
		n := s.finishSyncLocked(j.seg, err)
		s.mu.Unlock()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		synced = true
		if s.onSync != nil {
			s.onSync()
		}
		if n > 0 {
			s.signal(s.avail)
		}
	}
	return synced, errors.Join(errs...)
}

// finishSyncLocked records the outcome of a segment's fsync and returns how many records
// became durable. After a failed fsync the page cache can no longer be trusted: the
// segment is cut back to its durable size and sealed, and its unsynced records go back to
// the memory queue to be written again into a new segment.
func (s *spool) finishSyncLocked(seg *segment, err error) int {
	seg.syncing = false
	if err == nil && !seg.lost {
		seg.dirSynced = true
		n := seg.unsyncedN - seg.lateN
		if n > 0 {
			seg.groups = append(seg.groups, group{n: n, t: seg.unsyncedSince})
			seg.total += n
			s.records += int64(n)
			s.unread += n
		}
		seg.unsyncedBuf = seg.unsyncedBuf[:copy(seg.unsyncedBuf, seg.unsyncedBuf[seg.target-seg.durable:])]
		seg.durable = seg.target
		seg.unsyncedN, seg.unsyncedSeq, seg.unsyncedSince = seg.lateN, seg.lateSeq, seg.lateSince
		seg.lateN = 0
		if seg.sealed {
			s.sealLocked(seg) // closes the handle once nothing is left to sync
		}
		return n
	}
	if !seg.lost {
		if terr := seg.w.Truncate(seg.durable); terr != nil {
			s.log.Error("spool: cut unsynced tail", "segment", seg.id, "err", terr)
		}
		s.bytes -= seg.written - seg.durable
		seg.written = seg.durable
	}
	s.requeueLocked(seg)
	s.sealLocked(seg)
	s.gcLocked()
	return 0
}

// requeueLocked moves a segment's unsynced records to the front of the memory queue.
func (s *spool) requeueLocked(seg *segment) {
	if seg.unsyncedN == 0 {
		return
	}
	s.queue = append(seg.unsyncedBuf, s.queue...)
	if s.queueLen == 0 || seg.unsyncedSince.Before(s.queueSince) {
		s.queueSince = seg.unsyncedSince
	}
	if s.queueLen == 0 || seg.unsyncedSeq < s.queueSeq {
		s.queueSeq = seg.unsyncedSeq
	}
	s.queueLen += seg.unsyncedN
	seg.unsyncedBuf, seg.unsyncedN, seg.lateN = nil, 0, 0
	seg.unsyncedSince, seg.lateSince = time.Time{}, time.Time{}
	s.signal(s.wake)
}

// sealLocked stops appends to seg. Its handle stays open until its records are synced.
func (s *spool) sealLocked(seg *segment) {
	seg.sealed = true
	if s.active == seg {
		s.active = nil
	}
	if seg.w != nil && seg.unsyncedN == 0 && !seg.syncing {
		if err := seg.w.Close(); err != nil {
			s.log.Warn("spool: close segment", "segment", seg.id, "err", err)
		}
		seg.w = nil
		if cap(seg.unsyncedBuf) <= maxSpareBuf && s.spare == nil {
			s.spare = seg.unsyncedBuf[:0]
		}
		seg.unsyncedBuf = nil
	}
}

// flushed reports whether every record handed over up to sequence seq is fsynced.
func (s *spool) flushed(seq uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queueLen > 0 && s.queueSeq <= seq {
		return false
	}
	for _, seg := range s.segs {
		if seg.unsyncedN > 0 && seg.unsyncedSeq <= seq {
			return false
		}
	}
	return true
}

// handedOver returns the sequence of the last record handed over.
func (s *spool) handedOver() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
