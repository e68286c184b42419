package proxy

import (
	"errors"
	"net"
	"os"
	"strconv"

	"github.com/valyala/fasthttp"
)

// Failure classes of an upstream exchange, as recorded in usage.Attempt.Error.
const (
	FailConnect   = "connect"
	FailTimeout   = "timeout"
	FailTransport = "transport"
	FailOverload  = "overload"         // no free connection to the upstream within the wait
	FailConfig    = "config"           // the node cannot use the route (e.g. missing credential)
	FailCancelled = "cancelled"        // the client went away; the exchange was aborted
	FailInvalid   = "invalid_response" // the upstream answered 200 with an unusable body
)

// Classify names the failure class of an error returned by Do.
func Classify(err error) string {
	var de *DialError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrCancelled):
		return FailCancelled
	case errors.Is(err, ErrCredentials):
		return FailConfig
	case errors.Is(err, fasthttp.ErrNoFreeConns):
		return FailOverload
	case errors.As(err, &de):
		return FailConnect // a connect timeout is still a connect failure
	case isTimeout(err):
		return FailTimeout
	}
	return FailTransport
}

func isTimeout(err error) bool {
	if errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// RetryAfter returns the upstream's Retry-After in whole seconds (0 when absent or given
// as a date).
func RetryAfter(resp *fasthttp.Response) int {
	v := resp.Header.Peek("Retry-After")
	if len(v) == 0 {
		return 0
	}
	n, err := strconv.Atoi(string(v))
	if err != nil || n < 0 {
		return 0
	}
	return n
}
