package sse

import (
	"bufio"
	"bytes"
	"io"
	"testing"
	"testing/iotest"
)

// refReader is the reader before an event's single data line was left uncopied (Data then
// copied every data line into its own buffer). FuzzReaderMatchesReference holds Reader to it.
type refReader struct {
	br      *bufio.Reader
	max     int
	raw     []byte
	data    []byte
	dataSet bool
}

func newRefReader(src io.Reader, max int) *refReader {
	return &refReader{br: bufio.NewReaderSize(src, 16<<10), max: max}
}

func (r *refReader) Next() (Event, error) {
	r.raw = r.raw[:0]
	r.data = r.data[:0]
	r.dataSet = false
	nameStart, nameEnd, errStart, errEnd := -1, -1, -1, -1
	for {
		lineStart := len(r.raw)
		if err := r.readLine(); err != nil {
			if err == io.EOF {
				if n := len(r.raw); n > 0 && r.raw[n-1] == '\n' && lineStart == n {
					// A complete last event without its blank line: accepted.
					r.raw = append(r.raw, '\n')
					return r.finish(nameStart, nameEnd, errStart, errEnd), nil
				}
				if len(r.raw) > 0 {
					return Event{}, ErrTruncated
				}
				return Event{}, io.EOF
			}
			return Event{}, err
		}
		line := r.raw[lineStart:]
		// Strip the line ending.
		line = line[:len(line)-1]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if len(line) == 0 {
			if lineStart == 0 {
				// Blank lines between events (or a stray CRLF): skip, do not emit.
				r.raw = r.raw[:0]
				continue
			}
			return r.finish(nameStart, nameEnd, errStart, errEnd), nil
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if r.dataSet {
				r.data = append(r.data, '\n')
			}
			r.data = append(r.data, value...)
			r.dataSet = true
		case "event":
			off := lineStart + (len(line) - len(value))
			nameStart, nameEnd = off, off+len(value)
		case "error":
			off := lineStart + (len(line) - len(value))
			errStart, errEnd = off, off+len(value)
		}
	}
}

// finish is the event read into r.raw.
func (r *refReader) finish(nameStart, nameEnd, errStart, errEnd int) Event {
	ev := Event{Raw: r.raw}
	if r.dataSet {
		ev.Data = r.data
		if ev.Data == nil {
			ev.Data = []byte{}
		}
	}
	if nameStart >= 0 {
		ev.Name = r.raw[nameStart:nameEnd]
	}
	if errStart >= 0 {
		ev.Error = r.raw[errStart:errEnd]
	}
	return ev
}

// readLine appends one line including its LF to r.raw.
func (r *refReader) readLine() error {
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(r.raw)+len(chunk) > r.max {
			return ErrEventTooLarge
		}
		r.raw = append(r.raw, chunk...)
		switch err {
		case nil:
			return nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if len(chunk) > 0 {
				// Unterminated last line: the event cannot be complete.
				return io.EOF
			}
			return io.EOF
		default:
			return err
		}
	}
}

// FuzzReaderMatchesReference: Reader returns exactly the events and the error refReader
// returns, on any stream.
func FuzzReaderMatchesReference(f *testing.F) {
	f.Add([]byte("data: {\"a\":1}\n\ndata: [DONE]\n\n"), uint16(1024))
	f.Add([]byte("event: x\r\ndata\r\n\r\n: c\n\n"), uint16(1024))
	f.Add([]byte("data: a\ndata:b\ndata\n\ndata:\n\ndata: c\n: x\ndata: d\r\n\r\n"), uint16(1024))
	f.Add([]byte("event: e\ndata: 1\nevent: f\ndata: 2\nid: 3\n\n"), uint16(1024))
	f.Add([]byte("data: x"), uint16(1024))
	f.Add([]byte("data: xxxxxxxxxxxxxxxxxx\ndata: y\n\n"), uint16(20))
	f.Add([]byte("\n\n\n"), uint16(1024))
	f.Add([]byte("data: {}\n\nerror: {\"code\":500}\n\n"), uint16(1024))
	f.Add([]byte("data: [DONE]\r\n"), uint16(1024))
	f.Fuzz(func(t *testing.T, in []byte, max uint16) {
		m := int(max)%4096 + 1
		// Whole events in the buffer (read in place), and events arriving in pieces
		// (assembled line by line), as upstreams write them.
		for _, src := range []func() io.Reader{
			func() io.Reader { return bytes.NewReader(in) },
			func() io.Reader { return iotest.HalfReader(bytes.NewReader(in)) },
			func() io.Reader { return iotest.OneByteReader(bytes.NewReader(in)) },
		} {
			r, ref := NewReader(src(), m), newRefReader(bytes.NewReader(in), m)
			for {
				e, err := r.Next()
				re, rerr := ref.Next()
				if err != rerr {
					t.Fatalf("err %v, reference %v", err, rerr)
				}
				if err != nil {
					break
				}
				if !bytes.Equal(e.Raw, re.Raw) || !bytes.Equal(e.Data, re.Data) || !bytes.Equal(e.Error, re.Error) || (e.Data == nil) != (re.Data == nil) ||
					!bytes.Equal(e.Name, re.Name) || (e.Name == nil) != (re.Name == nil) {
					t.Fatalf("event {%q %q %q}, reference {%q %q %q}", e.Raw, e.Data, e.Name, re.Raw, re.Data, re.Name)
				}
			}
		}
	})
}
