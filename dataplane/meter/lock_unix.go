//go:build unix

package meter

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ErrSpoolLocked is returned when another process (or Meter) holds the spool.
var ErrSpoolLocked = errors.New("spool is in use by another meter")

// lockDir takes an exclusive advisory lock on path, so two meters never share a spool.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open spool lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrSpoolLocked, path)
		}
		return nil, fmt.Errorf("lock spool: %w", err)
	}
	return f, nil
}
