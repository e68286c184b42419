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
