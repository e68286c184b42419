// Package sse reads server-sent event streams as the HTML standard defines them: a stream
// of lines (ended by LF or CRLF), an event ending at a blank line, "data" fields joined with
// LF, lines starting with ':' being comments. It returns each event's raw bytes too, so a
// proxy can forward events byte for byte and one event at a time. It also names the events
// of the gateway's streaming protocols (names.go).
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// ErrEventTooLarge is returned when one event exceeds the reader's size limit.
var ErrEventTooLarge = errors.New("sse: event exceeds size limit")

// ErrTruncated is returned when the stream ends in the middle of an event.
var ErrTruncated = errors.New("sse: stream ended inside an event")

// DefaultMaxEvent is the interface's limit on one streamed event (2 MiB).
const DefaultMaxEvent = 2 << 20

// Event is one parsed event. Its slices point into the reader's buffers and stay valid only
// until the next call to Next (or Finish).
type Event struct {
	// Raw is the event as received: every line including the blank line that ended it.
	Raw []byte
	// Data is the event's data field values joined with LF; nil when it had none. It may
	// share its bytes with Raw (an event with one data line is not copied): treat both as
	// read-only.
	Data []byte
	// Name is the value of the event field, if any.
	Name []byte
	// Error is the value of an "error" field, if any: not a field of the standard (which
	// ignores it), but how llama.cpp server reports a failure inside a 200 stream
	// ("error: {...}").
	Error []byte
}

// Reader reads events from a stream.
type Reader struct {
	br   *bufio.Reader
	max  int
	raw  []byte
	data []byte
}

// NewReader returns a Reader over r that refuses events over max bytes (DefaultMaxEvent
// when max <= 0).
func NewReader(r io.Reader, max int) *Reader {
	if max <= 0 {
		max = DefaultMaxEvent
	}
	return &Reader{br: bufio.NewReaderSize(r, 16<<10), max: max}
}

// Reset makes the reader read from r, keeping its buffers.
func (r *Reader) Reset(src io.Reader) {
	r.br.Reset(src)
	r.raw = r.raw[:0]
	r.data = r.data[:0]
}

// Next reads the next event. Blocks of only comments are events too (with nil Data), so
// keep-alive comments can be relayed. At the end of the stream Next returns io.EOF, or
// ErrTruncated when a partial event was pending (the standard discards it). A last event
// whose lines are complete but which lacks its blank line is accepted (servers and relays
// that close the connection right after "data: [DONE]\n"); its Raw gets the blank line.
//
// An event that is whole in the reader's buffer (the usual case: upstreams write an event
// at a time) is returned in place, uncopied; one that is not is assembled line by line.
func (r *Reader) Next() (Event, error) {
	if n := r.br.Buffered(); n > 0 {
		buf, _ := r.br.Peek(n)
		var st fields
		if start, end := r.whole(buf, &st); end > 0 {
			_, _ = r.br.Discard(end)
			return r.event(buf[start:end], st.rebase(start)), nil
		}
	}
	r.raw = r.raw[:0]
	r.data = r.data[:0]
	var st fields
	for {
		lineStart := len(r.raw)
		if err := r.readLine(); err != nil {
			if err == io.EOF {
				if n := len(r.raw); n > 0 && r.raw[n-1] == '\n' && lineStart == n {
					r.raw = append(r.raw, '\n')
					return r.event(r.raw, &st), nil
				}
				if len(r.raw) > 0 {
					return Event{}, ErrTruncated
				}
				return Event{}, io.EOF
			}
			return Event{}, err
		}
		line := trimEOL(r.raw[lineStart:])
		if len(line) == 0 {
			if lineStart == 0 {
				// Blank lines between events (or a stray CRLF): skip, do not emit.
				r.raw = r.raw[:0]
				continue
			}
			return r.event(r.raw, &st), nil
		}
		r.field(r.raw, lineStart, line, &st)
	}
}

// whole finds the next event in buf, the reader's buffered bytes, noting its fields in f:
// it returns where the event starts and ends, end 0 when buf does not hold all of it.
func (r *Reader) whole(buf []byte, f *fields) (start, end int) {
	for i := 0; ; {
		j := bytes.IndexByte(buf[i:], '\n')
		if j < 0 || i+j+1-start > r.max {
			return 0, 0 // incomplete, or too large: the line reader decides
		}
		line := trimEOL(buf[i : i+j+1])
		if len(line) == 0 {
			if i == start {
				// Blank lines between events: skip.
				i += j + 1
				start = i
				continue
			}
			return start, i + j + 1
		}
		r.field(buf, i, line, f)
		i += j + 1
	}
}

// fields is where an event's fields are in its bytes, as they are read.
type fields struct {
	nameStart, nameEnd int // the event field's value; nameEnd 0 when there is none
	hasName            bool
	errStart, errEnd   int // the error field's value
	hasErr             bool
	// The value of the first data line: as long as it is the only one, it is Data,
	// uncopied; a second one copies it into the reader's data buffer.
	dataStart, dataEnd, dataLines int
}

// rebase makes f's offsets relative to off.
func (f *fields) rebase(off int) *fields {
	f.nameStart -= off
	f.nameEnd -= off
	f.errStart -= off
	f.errEnd -= off
	f.dataStart -= off
	f.dataEnd -= off
	return f
}

// trimEOL strips a line's LF or CRLF.
func trimEOL(line []byte) []byte {
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line
}

// field notes one non-blank line of an event, which starts at lineStart in buf.
func (r *Reader) field(buf []byte, lineStart int, line []byte, f *fields) {
	if line[0] == ':' {
		return
	}
	field, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		field, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	off := lineStart + (len(line) - len(value))
	switch string(field) {
	case "data":
		f.dataLines++
		if f.dataLines == 1 {
			f.dataStart, f.dataEnd = off, off+len(value)
			return
		}
		if f.dataLines == 2 {
			r.data = append(r.data[:0], buf[f.dataStart:f.dataEnd]...)
		}
		r.data = append(r.data, '\n')
		r.data = append(r.data, value...)
	case "event":
		f.nameStart, f.nameEnd, f.hasName = off, off+len(value), true
	case "error":
		f.errStart, f.errEnd, f.hasErr = off, off+len(value), true
	}
}

// event is the event of raw whose fields f noted.
func (r *Reader) event(raw []byte, f *fields) Event {
	ev := Event{Raw: raw}
	switch {
	case f.dataLines == 1:
		ev.Data = raw[f.dataStart:f.dataEnd:f.dataEnd]
	case f.dataLines > 1:
		ev.Data = r.data
	}
	if f.hasName {
		ev.Name = raw[f.nameStart:f.nameEnd]
	}
	if f.hasErr {
		ev.Error = raw[f.errStart:f.errEnd:f.errEnd]
	}
	return ev
}

// Finish reads the rest of the stream, discarding it, and reports whether the stream ended
// (io.EOF) within max more bytes. A proxy that has read a protocol's last event calls it
// so that the connection under the stream can be reused.
func (r *Reader) Finish(max int) bool {
	for n := 0; n <= max; {
		if b := r.br.Buffered(); b > 0 {
			d, _ := r.br.Discard(b)
			n += d
			continue
		}
		if _, err := r.br.Peek(1); err != nil {
			return err == io.EOF
		}
	}
	return false
}

// readLine appends one line including its LF to r.raw.
func (r *Reader) readLine() error {
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
