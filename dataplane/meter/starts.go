package meter

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
)

// Start entries: no request ID without a record.
//
// When a stream is committed (its 200 and X-Request-Id are about to reach the client), the
// server hands Start the record the request would have if the node died right then: result
// "interrupted", the prompt tokens known or estimated, its price. Start writes it, framed
// like a spool record, to the start journal (<DataDir>/spool/starts.log) with one write()
// and no fsync wait; the syncer fsyncs the journal one window after the first entry
// written since its last fsync, as the spool's syncer does records. An entry whose stream
// ended within that window needs no fsync: its end record is in the spool, durable within a
// window of its end like every record, so when every entry written since the last fsync
// has ended (short streams, most of them) the syncer skips the fsync. The stream's end
// record (Record) supersedes it: the entry is forgotten in memory, and the journal is
// rewritten with only the open entries once it has grown past startsCompactBytes and at
// least half of it is entries already done. The second condition keeps the rewrites'
// cost proportional to the entries written: when many streams are open at once (their
// entries alone past startsCompactBytes), a rewrite per ended stream would copy the whole
// journal each time, and thousands of streams ending together would hold the meter for
// seconds.
//
// When the node restarts, every entry of the journal whose request has no record in the
// spool is appended to the spool as its record. An entry whose end record was already
// confirmed and deleted from the spool (possible until the journal is next rewritten) is
// sent too and counted once by the control plane, which keeps the first record of a
// request ID.
const (
	startsName         = "starts.log"
	startsCompactBytes = 256 << 10
)

// startLog is the start journal. Its methods are safe for concurrent use.
type startLog struct {
	path string
	log  *slog.Logger

	mu       sync.Mutex
	f        *os.File
	size     int64 // bytes in the journal file
	live     int64 // bytes of the open entries (what a rewrite keeps)
	rewrites int   // rewrites since opening (tests)
	open     map[string]startEntry
	epoch    uint64 // fsyncs since opening: an entry written in this epoch is not durable yet
	unsynced int    // open entries written in this epoch
	rewrote  bool   // the journal file was replaced since the last fsync
	fsyncs   int    // fsyncs since opening (tests)
	writeErr error
	buf      []byte
	kick     chan struct{} // wakes the syncer when the first unsynced entry is written

	n atomic.Int64 // len(open), readable without the lock
}

// startEntry is an open entry: its frame, and the epoch it was written in.
type startEntry struct {
	frame []byte
	epoch uint64
}

// readStarts returns the valid entries of the journal in dir by request ID.
func readStarts(dir string, log *slog.Logger) (map[string][]byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, startsName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read start journal: %w", err)
	}
	out := map[string][]byte{}
	_, skipped := scanFrames(b, func(p []byte, _ int) {
		if id := gjson.GetBytes(p, "request_id").String(); id != "" {
			out[id] = bytes.Clone(p)
		}
	})
	if skipped > 0 {
		log.Warn("start journal: corrupt bytes skipped", "bytes", skipped)
	}
	return out, nil
}

// openStarts starts an empty journal in dir (replacing what was there: call it after the
// old entries were recovered).
func openStarts(dir string, log *slog.Logger) (*startLog, error) {
	l := &startLog{path: filepath.Join(dir, startsName), log: log, open: map[string]startEntry{}, kick: make(chan struct{}, 1)}
	if err := l.rewriteLocked(); err != nil {
		return nil, err
	}
	return l, nil
}

// add writes the entry of request id.
func (l *startLog) add(id string, payload []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return
	}
	frame := appendFrame(nil, payload)
	if old, ok := l.open[id]; ok {
		l.forgetLocked(old)
	}
	l.open[id] = startEntry{frame: frame, epoch: l.epoch}
	l.live += int64(len(frame))
	l.n.Store(int64(len(l.open)))
	if l.unsynced++; l.unsynced == 1 {
		l.kickSyncer()
	}
	if _, err := l.f.Write(frame); err != nil {
		l.failLocked(err)
		return
	}
	l.size += int64(len(frame))
}

// kickSyncer tells the syncer there is something to fsync.
func (l *startLog) kickSyncer() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// forgetLocked takes an entry leaving the open set out of the counts.
func (l *startLog) forgetLocked(e startEntry) {
	l.live -= int64(len(e.frame))
	if e.epoch == l.epoch {
		l.unsynced--
	}
}

// done forgets the entry of request id: its record was handed to the spool.
func (l *startLog) done(id string) {
	if l.n.Load() == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.open[id]
	if !ok {
		return
	}
	delete(l.open, id)
	l.forgetLocked(e)
	l.n.Store(int64(len(l.open)))
	if l.size > startsCompactBytes && l.size > 2*l.live && l.f != nil {
		if err := l.rewriteLocked(); err != nil {
			l.failLocked(err)
		}
	}
}

func (l *startLog) failLocked(err error) {
	if l.writeErr == nil {
		l.log.Error("start journal write failed; streams of this node may end without a record if it crashes", "err", err)
	}
	l.writeErr = err
}

// rewriteLocked replaces the journal with the open entries (temp file and rename).
func (l *startLog) rewriteLocked() error {
	tmp := l.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("create start journal: %w", err)
	}
	l.buf = l.buf[:0]
	for _, e := range l.open {
		l.buf = append(l.buf, e.frame...)
	}
	if _, err := f.Write(l.buf); err != nil {
		f.Close()
		return fmt.Errorf("write start journal: %w", err)
	}
	if err := os.Rename(tmp, l.path); err != nil {
		f.Close()
		return fmt.Errorf("replace start journal: %w", err)
	}
	if l.f != nil {
		l.f.Close()
	}
	l.f, l.size, l.live, l.rewrote, l.writeErr = f, int64(len(l.buf)), int64(len(l.buf)), true, nil
	l.kickSyncer()
	l.rewrites++
	if cap(l.buf) > 1<<20 {
		l.buf = nil
	}
	return nil
}

// sync fsyncs the journal when open entries were written since the last fsync, or the
// file was replaced; entries written since then are durable once it returns.
func (l *startLog) sync() {
	l.mu.Lock()
	f, need := l.f, l.unsynced > 0 || l.rewrote
	l.epoch++ // entries written from now on are for the next fsync
	l.unsynced, l.rewrote = 0, false
	if need && f != nil {
		l.fsyncs++
	}
	l.mu.Unlock()
	if need && f != nil {
		if err := syncData(f); err != nil && !errors.Is(err, os.ErrClosed) {
			l.log.Warn("start journal fsync failed", "err", err)
		}
	}
}

// syncLoop fsyncs the journal one window after the first entry written since the last
// fsync, until stop is closed.
func (l *startLog) syncLoop(window time.Duration, stop <-chan struct{}) {
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		select {
		case <-stop:
			l.sync()
			return
		case <-l.kick:
		}
		if window > 0 {
			t.Reset(window)
			select {
			case <-stop:
				t.Stop()
				l.sync()
				return
			case <-t.C:
			}
		}
		l.sync()
	}
}

func (l *startLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		_ = l.f.Sync()
		l.f.Close()
		l.f = nil
	}
}

// scanFrames calls fn for every valid frame of data whose payload is a JSON object, in
// order, with the offset just past the frame. A torn or corrupt frame is skipped by searching forward, byte by byte, for the
// next offset where a frame with a sane length, a matching checksum and a JSON-object
// payload begins. It returns the number of frames found and of bytes skipped.
func scanFrames(data []byte, fn func(p []byte, end int)) (n int, skipped int64) {
	off := 0
	for off < len(data) {
		if p, size, ok := frameAt(data, off); ok {
			off += size
			fn(p, off)
			n++
			continue
		}
		next := off + 1
		for next < len(data) {
			if _, _, ok := frameAt(data, next); ok {
				break
			}
			next++
		}
		skipped += int64(next - off)
		off = next
	}
	return n, skipped
}

// frameAt checks for a valid frame at data[off:] and returns its payload and size.
func frameAt(data []byte, off int) ([]byte, int, bool) {
	if len(data)-off < frameHeader+1 {
		return nil, 0, false
	}
	size := int(le32(data[off:]))
	if size == 0 || size > maxFramePayload || size > len(data)-off-frameHeader {
		return nil, 0, false
	}
	p := data[off+frameHeader : off+frameHeader+size]
	if crc(p) != le32(data[off+4:]) || !validRecordJSON(p) {
		return nil, 0, false
	}
	return p, frameHeader + size, true
}
