//go:build !unix

package meter

import (
	"errors"
	"fmt"
	"os"
)

// ErrSpoolLocked is returned when another process (or Meter) holds the spool.
var ErrSpoolLocked = errors.New("spool is in use by another meter")

// lockDir creates the lock file exclusively; a stale file after a crash must be removed by
// the operator on platforms without flock.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%w: %s", ErrSpoolLocked, path)
		}
		return nil, fmt.Errorf("open spool lock: %w", err)
	}
	return f, nil
}
