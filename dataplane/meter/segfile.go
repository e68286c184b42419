package meter

import (
	"fmt"
	"os"
	"runtime/debug"
)

// mapSlack is mapped beyond the segment size, so that the frame that fills a segment
// usually still lands in the mapping.
const mapSlack = 64 << 10

// mappedFile is a segment file written through a shared memory mapping of space reserved
// for it up front. A Write copies the frames into the mapping, which is the file's page
// cache: the record survives the death of the process exactly as a write() would, but no
// system call is made per record (on Linux a write() to a file costs several microseconds,
// most of the data plane's remaining per-request overhead against a bare proxy). Sync is
// an fdatasync of the file (syncData), which covers pages written through the mapping.
//
// Bytes that do not fit in the mapping (a queue of records drained at once) go to the file
// with pwrite. Where the space cannot be reserved or mapped, every Write is a pwrite.
//
// The file is reserved larger than its frames: until Close cuts it to its length, its tail
// is zeros, which recovery recognises as the unused end of a segment (see zeroTail).
type mappedFile struct {
	f *os.File
	m []byte // the mapping; nil when not mapped (never, or after Truncate or Close)
	n int64  // bytes of frames written
}

// createSegFile creates the segment file at path with room for size bytes of frames.
func createSegFile(path string, size int64) (segFile, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	mf := &mappedFile{f: f}
	if m, err := mapSegment(f, size+mapSlack); err == nil {
		mf.m = m
	} else if err := f.Truncate(0); err != nil {
		// The space could not be reserved (the disk is nearly full, or the file system
		// cannot): pwrite only, from an empty file.
		f.Close()
		_ = os.Remove(path)
		return nil, fmt.Errorf("reset segment after a failed reservation: %w", err)
	}
	return mf, nil
}

func (mf *mappedFile) Write(p []byte) (int, error) {
	if mf.m != nil && mf.n+int64(len(p)) <= int64(len(mf.m)) {
		if err := copyMapped(mf.m[mf.n:], p); err != nil {
			return 0, err
		}
		mf.n += int64(len(p))
		return len(p), nil
	}
	w, err := mf.f.WriteAt(p, mf.n)
	mf.n += int64(w)
	return w, err
}

// copyMapped copies src into the mapping; a fault (the reserved space lost, an I/O error
// reading a page back) is returned as an error instead of killing the process.
func copyMapped(dst, src []byte) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("write through spool mapping: %v", r)
		}
	}()
	copy(dst, src)
	return nil
}

func (mf *mappedFile) Sync() error { return syncData(mf.f) }

// Truncate cuts the file to size. The mapping is dropped first (pages past the end of a
// file must not be touched); later Writes, if any, are pwrites.
func (mf *mappedFile) Truncate(size int64) error {
	if err := mf.unmap(); err != nil {
		return err
	}
	if err := mf.f.Truncate(size); err != nil {
		return err
	}
	mf.n = size
	return nil
}

// Close unmaps the file, cuts it to its frames and closes it.
func (mf *mappedFile) Close() error {
	err := mf.unmap()
	if terr := mf.f.Truncate(mf.n); err == nil {
		err = terr
	}
	if cerr := mf.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// drop closes the file as the death of the process would: unmapped, not cut to length.
func (mf *mappedFile) drop() {
	_ = mf.unmap()
	_ = mf.f.Close()
}

func (mf *mappedFile) unmap() error {
	if mf.m == nil {
		return nil
	}
	m := mf.m
	mf.m = nil
	if err := unmapSegment(m); err != nil {
		return fmt.Errorf("unmap segment: %w", err)
	}
	return nil
}
