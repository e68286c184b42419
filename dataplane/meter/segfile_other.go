//go:build !linux

package meter

import (
	"errors"
	"os"
)

// mapSegment is Linux only; elsewhere segments are written with pwrite.
func mapSegment(*os.File, int64) ([]byte, error) {
	return nil, errors.New("segment mapping is not supported on this platform")
}

func unmapSegment([]byte) error { return nil }

// syncData is fsync where fdatasync is not used.
func syncData(f *os.File) error { return f.Sync() }
