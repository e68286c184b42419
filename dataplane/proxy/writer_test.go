package proxy

import "bufio"

// fakeWriter counts the writes reaching the underlying writer (one per flush).
type fakeWriter struct{ n int }

func (f *fakeWriter) Write(p []byte) (int, error) { f.n++; return len(p), nil }
func (f *fakeWriter) writer() *bufio.Writer       { return bufio.NewWriterSize(f, 64<<10) }
func (f *fakeWriter) flushes() int                { return f.n }
