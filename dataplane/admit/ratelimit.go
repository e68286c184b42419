package admit

import (
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/limits"
)

// The OpenAI convention's request-rate headers, from this node's limiter: every node
// enforces its own share of a limit (its fleet share, dataplane/fleetshare), so they
// describe the node that answered, not the deployment.
const (
	headerLimitRequests     = "X-Ratelimit-Limit-Requests"
	headerRemainingRequests = "X-Ratelimit-Remaining-Requests"
	headerResetRequests     = "X-Ratelimit-Reset-Requests"
)

// setRateHeaders writes v as the x-ratelimit-*-requests headers: the bucket's size, the
// whole requests left in it, and the time until it is full again ("0s", "250ms", "1.5s",
// "2m30s").
func setRateHeaders(h *fasthttp.ResponseHeader, v limits.View) {
	var buf [32]byte
	h.SetBytesV(headerLimitRequests, strconv.AppendInt(buf[:0], int64(v.Limit), 10))
	h.SetBytesV(headerRemainingRequests, strconv.AppendInt(buf[:0], int64(v.Remaining), 10))
	h.SetBytesV(headerResetRequests, appendResetDuration(buf[:0], v.Reset))
}

// appendResetDuration formats d, rounded up to the millisecond, the way the OpenAI
// convention writes reset times: milliseconds under a second, else hours, minutes and
// seconds with up to three decimals.
func appendResetDuration(b []byte, d time.Duration) []byte {
	if d <= 0 {
		return append(b, "0s"...)
	}
	ms := int64((d + time.Millisecond - 1) / time.Millisecond)
	if ms < 1000 {
		return append(strconv.AppendInt(b, ms, 10), "ms"...)
	}
	if h := ms / 3_600_000; h > 0 {
		b = append(strconv.AppendInt(b, h, 10), 'h')
		ms -= h * 3_600_000
	}
	if m := ms / 60_000; m > 0 || len(b) > 0 && b[len(b)-1] == 'h' {
		b = append(strconv.AppendInt(b, m, 10), 'm')
		ms -= m * 60_000
	}
	b = strconv.AppendInt(b, ms/1000, 10)
	if frac := ms % 1000; frac > 0 {
		b = append(b, '.')
		digits := [3]byte{byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}
		n := 3
		for digits[n-1] == '0' {
			n--
		}
		b = append(b, digits[:n]...)
	}
	return append(b, 's')
}
