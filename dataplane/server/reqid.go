package server

import (
	"math/rand/v2"
	"time"

	"github.com/oklog/ulid/v2"
)

// requestIDLen is the length of "req_" plus a 26-character ULID.
const requestIDLen = 4 + ulid.EncodedSize

// newRequestID writes a fresh "req_<ulid>" into dst. The ULID's time part is the current
// millisecond and its 80 random bits come from math/rand/v2's per-thread generator, so no
// lock is taken and nothing is allocated. IDs sort by time; they are not secrets.
func newRequestID(dst *[requestIDLen]byte, now time.Time) {
	var id ulid.ULID
	_ = id.SetTime(ulid.Timestamp(now))
	a, b := rand.Uint64(), rand.Uint64()
	e := id[6:]
	for i := 0; i < 8; i++ {
		e[i] = byte(a >> (8 * i))
	}
	e[8], e[9] = byte(b), byte(b>>8)
	copy(dst[:4], "req_")
	_ = id.MarshalTextTo(dst[4:])
}
