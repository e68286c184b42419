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
	qseq    uint64    // records ever enqueued
	tfirst  time.Time // arrival of the oldest record the writer has taken but not yet written
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

// spoolState is what Stats reports of the spool.
type spoolState struct {
	records, queued, bytes int64
	oldest                 time.Time
	werr                   error
}

func (s *spool) state() spoolState {
	qn, _ := s.queued()
	mem := s.oldestInMemory()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := spoolState{records: s.pending.Load(), queued: int64(qn), bytes: s.bytes, werr: s.werr, oldest: mem}
	for _, seg := range s.segs {
		if len(seg.groups) > 0 {
			st.oldest = seg.groups[0].t
			break
		}
	}
	return st
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
