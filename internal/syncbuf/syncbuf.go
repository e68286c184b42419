// Package syncbuf provides Buffer, a bytes.Buffer that concurrent writers and a reader may
// share: tests hand it to a logger and read what was logged.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is safe for concurrent use; the zero value is empty and ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
