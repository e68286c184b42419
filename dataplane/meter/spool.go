package meter

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	segPrefix = "seg-"
	segSuffix = ".log"
	lockName  = "LOCK"
)

// segment is one append-only spool file. All fields are guarded by spool.mu except w,
// which only the writer uses between marking writing and clearing it.
type segment struct {
	id      uint64
	path    string
	w       *os.File // append handle of the active segment; nil once sealed
	r       *os.File // read handle, opened when the sender first reads
	durable int64    // bytes of valid, fsynced frames
	readOff int64    // how far the sender has read
	total   int      // records in the durable region
	read    int      // records handed to the sender
	conf    int      // records confirmed by the control plane
	sealed  bool
	writing bool    // the writer is appending to w without holding the lock
	groups  []group // unconfirmed records by arrival time, oldest first
}

type group struct {
	n int
	t time.Time
}

// span is a run of records of one segment that went into a batch.
type span struct {
	seg *segment
	n   int
}

// spool is the on-disk queue of records awaiting confirmation.
type spool struct {
	dir      string
	segBytes int64
	window   time.Duration
	log      *slog.Logger
	now      func() time.Time
	lockFile *os.File
	onSync   func() // called after each grouped fsync
	// createFile creates a segment file; tests replace it to inject disk failures.
	createFile func(path string) (*os.File, error)

	// queue of framed records handed over but not yet written; guarded by qmu.
	qmu     sync.Mutex
	qbuf    []byte
	qspare  []byte
	qn      int
	qfirst  time.Time
	qseq    uint64 // records ever enqueued
	qclosed bool
	wake    chan struct{} // writer wake-up, capacity 1

	mu      sync.Mutex
	segs    []*segment
	active  *segment
	nextID  uint64
	records int64 // durable records not yet confirmed
	unread  int   // durable records not yet handed to the sender
	bytes   int64 // bytes of segment files
	durSeq  uint64
	werr    error // last write error, cleared by a successful write

	// pending counts records handed over and not yet confirmed (queued, being written or
	// durable); kept apart from the two locks so Stats never misses records in transit.
	pending atomic.Int64

	avail chan struct{} // sender wake-up after a write, capacity 1
	stop  chan struct{}
	done  chan struct{}
}

// openSpool opens (creating) the spool in dir, recovers the records its segments hold,
// calling fn for each recovered payload, and starts the writer.
func openSpool(dir string, segBytes int64, window time.Duration, log *slog.Logger, now func() time.Time,
	onSync func(), fn func(payload []byte)) (*spool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create spool dir: %w", err)
	}
	lf, err := lockDir(filepath.Join(dir, lockName))
	if err != nil {
		return nil, err
	}
	s := &spool{
		dir: dir, segBytes: segBytes, window: window, log: log, now: now, onSync: onSync, lockFile: lf,
		nextID: 1,
		createFile: func(path string) (*os.File, error) {
			return os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
		},
		wake: make(chan struct{}, 1), avail: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	if err := s.recover(fn); err != nil {
		lf.Close()
		return nil, err
	}
	go s.writeLoop()
	return s, nil
}

func parseSegName(name string) (uint64, bool) {
	if !strings.HasPrefix(name, segPrefix) || !strings.HasSuffix(name, segSuffix) {
		return 0, false
	}
	id, err := strconv.ParseUint(name[len(segPrefix):len(name)-len(segSuffix)], 10, 64)
	return id, err == nil && id > 0
}

func (s *spool) segPath(id uint64) string {
	return filepath.Join(s.dir, fmt.Sprintf("%s%020d%s", segPrefix, id, segSuffix))
}

func (s *spool) recover(fn func([]byte)) error {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("read spool dir: %w", err)
	}
	var ids []uint64
	for _, e := range ents {
		if id, ok := parseSegName(e.Name()); ok && e.Type().IsRegular() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		s.nextID = id + 1
		seg, err := s.recoverSegment(id, fn)
		if err != nil {
			return err
		}
		if seg == nil {
			continue
		}
		s.segs = append(s.segs, seg)
		s.records += int64(seg.total)
		s.pending.Add(int64(seg.total))
		s.unread += seg.total
		s.bytes += seg.durable
	}
	if s.records > 0 {
		s.log.Info("spool recovered", "records", s.records, "segments", len(s.segs), "bytes", s.bytes)
	}
	return nil
}

// recoverSegment reads the valid frames of one segment. An empty segment is removed and
// nil returned. A torn or corrupt tail is logged and left in place; reads stop before it.
func (s *spool) recoverSegment(id uint64, fn func([]byte)) (*segment, error) {
	path := s.segPath(id)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open segment %d: %w", id, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat segment %d: %w", id, err)
	}
	seg := &segment{id: id, path: path, sealed: true}
	var first time.Time
	n, valid, err := decodeSegment(bufio.NewReaderSize(f, 64<<10), func(p []byte) {
		if first.IsZero() {
			first = recordTime(p)
		}
		fn(p)
	})
	if err != nil && !errors.Is(err, errTorn) && !errors.Is(err, errCorrupt) {
		return nil, fmt.Errorf("read segment %d: %w", id, err)
	}
	if err != nil || valid != fi.Size() {
		s.log.Warn("spool segment has a torn or corrupt tail; skipping it",
			"segment", id, "records", n, "valid_bytes", valid, "skipped_bytes", fi.Size()-valid, "err", err)
	}
	if n == 0 {
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove empty segment %d: %w", id, err)
		}
		return nil, nil
	}
	if first.IsZero() {
		first = fi.ModTime()
	}
	seg.durable, seg.total = valid, n
	seg.groups = []group{{n: n, t: first}}
	return seg, nil
}

// decodeSegment calls fn for each valid record of a segment and returns their count and
// the length of the valid prefix. It stops at the first torn, corrupt or non-JSON frame
// (returned as errTorn or errCorrupt) or at the end of data (nil error).
func decodeSegment(r *bufio.Reader, fn func(p []byte)) (n int, valid int64, err error) {
	var buf []byte
	for {
		p, size, err := readFrame(r, &buf)
		if err == io.EOF {
			return n, valid, nil
		}
		if err != nil {
			return n, valid, err
		}
		if !validRecordJSON(p) {
			return n, valid, fmt.Errorf("%w: payload is not a JSON object", errCorrupt)
		}
		fn(p)
		n++
		valid += size
	}
}

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
	return buf, n, first, seq
}

// giveBack returns a written buffer for reuse, or requeues an unwritten one in front of
// whatever arrived since.
func (s *spool) giveBack(buf []byte, n int, first time.Time, written bool) {
	s.qmu.Lock()
	defer s.qmu.Unlock()
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

// gcLocked deletes segments whose records are all confirmed. The active segment goes too
// when the writer is not appending to it; the next write starts a new one.
func (s *spool) gcLocked() {
	keep := s.segs[:0]
	for _, seg := range s.segs {
		done := seg.conf == seg.total && !seg.writing && (seg.sealed || seg.total > 0)
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
		s.bytes -= seg.durable
	}
	clear(s.segs[len(keep):])
	s.segs = keep
}

// readUnsent calls fn with up to max durable records not yet handed to the sender, in
// spool order, and returns the spans they came from. The payload passed to fn is only
// valid during the call.
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

		br := bufio.NewReaderSize(io.NewSectionReader(r, off, end-off), 64<<10)
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
		s.mu.Lock()
		seg.readOff += consumed
		seg.read += n
		s.unread -= n
		if rerr != nil {
			// Frames that were durable no longer read back: the disk lost them. Nothing can
			// bring them back; count them as gone so the spool does not wedge on them.
			lost := seg.total - seg.read
			s.log.Error("spool: durable records unreadable; they are lost", "segment", seg.id,
				"records", lost, "err", rerr)
			seg.total = seg.read
			seg.durable = seg.readOff
			s.unread -= lost
			s.records -= int64(lost)
			s.pending.Add(-int64(lost))
			popGroups(&seg.groups, lost, true)
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
		sp.seg.conf += sp.n
		s.records -= int64(sp.n)
		s.pending.Add(-int64(sp.n))
		popGroups(&sp.seg.groups, sp.n, false)
	}
	s.gcLocked()
}

// spoolState is what Stats reports of the spool.
type spoolState struct {
	records, queued, bytes int64
	oldest                 time.Time
	werr                   error
}

func (s *spool) state() spoolState {
	qn, qfirst := s.queued()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := spoolState{records: s.pending.Load(), queued: int64(qn), bytes: s.bytes, werr: s.werr}
	for _, seg := range s.segs {
		if len(seg.groups) > 0 {
			st.oldest = seg.groups[0].t
			break
		}
	}
	if st.oldest.IsZero() && qn > 0 {
		st.oldest = qfirst
	}
	return st
}

func (s *spool) unreadCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unread
}

// durableSeq returns how many records ever enqueued are durable, and how many were enqueued.
func (s *spool) seqs() (durable, enqueued uint64) {
	s.qmu.Lock()
	enqueued = s.qseq
	s.qmu.Unlock()
	s.mu.Lock()
	durable = s.durSeq
	s.mu.Unlock()
	return durable, enqueued
}

// close stops accepting records, writes what is queued, and closes every file.
func (s *spool) close() error {
	s.qmu.Lock()
	s.qclosed = true
	s.qmu.Unlock()
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	werr := s.werr
	s.closeFilesLocked()
	return werr
}

// abandon simulates a crash: queued records are dropped and files closed without a
// final write. Only tests use it.
func (s *spool) abandon() {
	s.qmu.Lock()
	s.qclosed = true
	s.qbuf, s.qn = nil, 0
	s.qmu.Unlock()
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeFilesLocked()
}

func (s *spool) closeFilesLocked() {
	for _, seg := range s.segs {
		if seg.w != nil {
			seg.w.Close()
			seg.w = nil
		}
		if seg.r != nil {
			seg.r.Close()
			seg.r = nil
		}
	}
	s.active = nil
	if s.lockFile != nil {
		s.lockFile.Close()
		s.lockFile = nil
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
