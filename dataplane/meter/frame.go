package meter

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Spool frame: uint32 LE payload length, uint32 LE CRC-32C of the payload, payload.
const (
	frameHeader     = 8
	maxFramePayload = 16 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var (
	// errTorn: the data ends inside a frame (a write cut short by a crash).
	errTorn = errors.New("torn frame")
	// errCorrupt: a frame whose length or checksum is wrong.
	errCorrupt = errors.New("corrupt frame")
)

// appendFrame appends payload framed for the spool to dst.
func appendFrame(dst, payload []byte) []byte {
	var h [frameHeader]byte
	binary.LittleEndian.PutUint32(h[0:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[4:8], crc32.Checksum(payload, castagnoli))
	dst = append(dst, h[:]...)
	return append(dst, payload...)
}

// readFrame reads one frame from r into *buf (grown as needed) and returns its payload,
// valid until the next call, and the frame's size on disk. It returns io.EOF at a clean
// end of data, errTorn when the data ends inside a frame and errCorrupt for a frame with a
// zero or oversized length (zero-filled blocks after a power loss look like that) or a
// wrong checksum.
func readFrame(r *bufio.Reader, buf *[]byte) ([]byte, int64, error) {
	var h [frameHeader]byte
	if n, err := io.ReadFull(r, h[:]); err != nil {
		if n == 0 && err == io.EOF {
			return nil, 0, io.EOF
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, 0, errTorn
		}
		return nil, 0, err
	}
	size := binary.LittleEndian.Uint32(h[0:4])
	if size == 0 || size > maxFramePayload {
		return nil, 0, fmt.Errorf("%w: length %d", errCorrupt, size)
	}
	if cap(*buf) < int(size) {
		*buf = make([]byte, size)
	}
	p := (*buf)[:size]
	if _, err := io.ReadFull(r, p); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
			return nil, 0, errTorn
		}
		return nil, 0, err
	}
	if crc32.Checksum(p, castagnoli) != binary.LittleEndian.Uint32(h[4:8]) {
		return nil, 0, fmt.Errorf("%w: checksum mismatch", errCorrupt)
	}
	return p, frameHeader + int64(size), nil
}

func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

func crc(p []byte) uint32 { return crc32.Checksum(p, castagnoli) }
