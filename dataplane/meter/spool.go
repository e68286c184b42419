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

// segment is one append-only spool file. All fields are guarded by spool.mu; w is also
// used by the syncer without the lock while syncing is set (it is never closed then), and
// dirSynced only by the syncer.
//
// The file holds [0, written): durable (fsynced) frames up to durable, then frames written
// to the kernel but not yet fsynced, whose copy is kept in pend so they can be written
// again elsewhere if the fsync fails.
type segment struct {
	id        uint64
	path      string
	w         segFile  // append handle; nil once sealed and synced
	r         *os.File // read handle, opened when the sender first reads
	written   int64    // bytes of valid frames written to the file
	durable   int64    // bytes of valid, fsynced frames
	readOff   int64    // how far the sender has read
	total     int      // records in the durable region
	read      int      // records handed to the sender
	confirmed int      // records confirmed by the control plane
	sealed    bool
	lost      bool    // durable frames failed to read back; the segment only drains
	groups    []group // durable unconfirmed records by arrival time, oldest first

	// Unsynced region [durable, written).
	unsyncedBuf   []byte    // its frames
	unsyncedN     int       // its records
	unsyncedSeq   uint64    // smallest sequence among them
	unsyncedSince time.Time // arrival of the oldest of them
	dirSynced     bool      // the spool directory was fsynced after the file was created
	// A running fsync covers [durable, target); lateN records (smallest sequence lateSeq, oldest
	// arrival lateSince) were appended after it started.
	syncing   bool
	target    int64
	lateN     int
	lateSeq   uint64
	lateSince time.Time
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
	createFile func(path string) (segFile, error)

	mu     sync.Mutex
	segs   []*segment
	active *segment
	nextID uint64
	seq    uint64 // records ever handed over; the last one's sequence
	// Records that could not be written (the disk failed, or their fsync did) wait here,
	// framed, in front of any record handed over after them, until the syncer writes them.
	queue       []byte
	queueLen    int
	queueSince  time.Time // arrival of the oldest
	queueSeq    uint64    // smallest sequence among them
	queueClosed bool
	spare       []byte // a segment's unsyncedBuf kept for the next segment
	lastCap     int    // capacity of the unsyncedBuf of the last segment sealed by size
	records     int64  // durable records not yet confirmed
	unread      int    // durable records not yet handed to the sender
	bytes       int64  // bytes of segment files
	writeErr    error  // last write or fsync error, cleared by a successful one
	syncJobs    []syncJob

	// pending counts records handed over and not yet confirmed (queued, unsynced or
	// durable); readable without the lock.
	pending atomic.Int64

	wake   chan struct{} // syncer wake-up after a write, capacity 1
	hurry  chan struct{} // Flush asks the syncer to skip the window, capacity 1
	killed atomic.Bool   // abandon: the syncer must do no more work
	avail  chan struct{} // sender wake-up after a write, capacity 1
	stop   chan struct{}
	done   chan struct{}
}

// openSpool opens (creating) the spool in dir, recovers the records its segments hold,
// calling fn for each recovered payload, and starts the syncer.
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
		nextID:     1,
		createFile: func(path string) (segFile, error) { return createSegFile(path, segBytes) },
		wake:       make(chan struct{}, 1), hurry: make(chan struct{}, 1), avail: make(chan struct{}, 1),
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
	seg := &segment{id: id, path: path, sealed: true, dirSynced: true}
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
	damaged := err != nil || valid != fi.Size()
	if damaged {
		zeros, zerr := zeroTail(f, valid)
		if zerr != nil {
			return nil, fmt.Errorf("read segment %d: %w", id, zerr)
		}
		if zeros {
			// Not damage: the unused, still reserved end of a segment whose process died
			// before closing it. The file is cut to its frames.
			if err := cutSegment(path, valid); err != nil {
				return nil, fmt.Errorf("cut segment %d to its frames: %w", id, err)
			}
			damaged = false
		}
	}
	if damaged {
		// A torn or corrupt frame: the valid frames after it (if any) are found by scanning
		// for the next frame header with a matching checksum, and the segment is rewritten
		// with the valid frames only, so that readers never meet the damage again.
		m, kept, skipped, rerr := s.salvageSegment(path, valid, fn)
		if rerr != nil {
			return nil, fmt.Errorf("salvage segment %d: %w", id, rerr)
		}
		s.log.Warn("spool segment damaged: corrupt or torn bytes skipped",
			"segment", id, "records_before", n, "records_after", m, "skipped_bytes", skipped, "err", err)
		n += m
		valid = kept
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
	seg.written, seg.durable, seg.total = valid, valid, n
	seg.groups = []group{{n: n, t: first}}
	return seg, nil
}

// zeroTail reports whether f holds only zero bytes from offset from on.
func zeroTail(f *os.File, from int64) (bool, error) {
	buf := make([]byte, 64<<10)
	for {
		n, err := f.ReadAt(buf, from)
		for _, b := range buf[:n] {
			if b != 0 {
				return false, nil
			}
		}
		from += int64(n)
		if err == io.EOF {
			return true, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// cutSegment truncates the segment at path to size and fsyncs it.
func cutSegment(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
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
	writeErr               error
}

func (s *spool) state() spoolState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := spoolState{records: s.pending.Load(), queued: int64(s.queueLen), bytes: s.bytes, writeErr: s.writeErr,
		oldest: s.oldestUnsyncedLocked()}
	for _, seg := range s.segs {
		st.queued += int64(seg.unsyncedN)
	}
	for _, seg := range s.segs {
		if len(seg.groups) > 0 {
			if t := seg.groups[0].t; st.oldest.IsZero() || t.Before(st.oldest) {
				st.oldest = t
			}
			break
		}
	}
	return st
}

// close stops accepting records, writes and fsyncs what is left, and closes every file.
func (s *spool) close() error {
	s.mu.Lock()
	s.queueClosed = true
	s.mu.Unlock()
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	writeErr := s.writeErr
	s.closeFilesLocked()
	return writeErr
}

// abandon simulates the process being killed: the syncer stops without writing or
// fsyncing anything more, records held in memory are dropped, and files are closed. What
// was written to the files stays, as it does in the page cache when a process dies. Only
// tests use it.
func (s *spool) abandon() {
	s.killed.Store(true)
	s.mu.Lock()
	s.queueClosed = true
	s.queue, s.queueLen = nil, 0
	s.mu.Unlock()
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, seg := range s.segs {
		if d, ok := seg.w.(interface{ drop() }); ok {
			d.drop() // not cut to length, as a dying process leaves it
			seg.w = nil
		}
	}
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

// salvageSegment scans the segment at path from byte valid on for frames after damage,
// calls fn for each, and, when it found any or skipped anything, rewrites the file as its
// first valid bytes plus those frames (temp file, fsync, rename, directory fsync). It
// returns the frames found, the new valid length and the bytes skipped.
func (s *spool) salvageSegment(path string, valid int64, fn func([]byte)) (int, int64, int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, 0, err
	}
	if valid > int64(len(data)) {
		valid = int64(len(data))
	}
	var tail []byte
	n, skipped := scanFrames(data[valid:], func(p []byte, _ int) {
		tail = appendFrame(tail, p)
		fn(p)
	})
	if skipped == 0 && n == 0 {
		return 0, valid, 0, nil
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, 0, 0, err
	}
	_, err = f.Write(data[:valid])
	if err == nil {
		_, err = f.Write(tail)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return 0, 0, 0, err
	}
	if d, err := os.Open(s.dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return n, valid + int64(len(tail)), skipped, nil
}
