package outcome

import (
	"errors"
	"io"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/dialect"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/shared/apierror"
)

// Classify is the one classifier of what an attempt came to: err from the exchange
// (proxy.Upstream.Do, or the stream's first event: proxy.Stream.Peek), else resp's status.
// An error the server reported (a non-200 body, or the stream's first event) is read in
// any server's shape (dialect.ReadError), and the client's answer carries its message.
// A nil error with a 200 is no failure.
func Classify(err error, resp *fasthttp.Response) Failure {
	switch {
	case err != nil:
		return classifyErr(err)
	case resp == nil || resp.StatusCode() == fasthttp.StatusOK:
		return Failure{}
	}
	return classifyStatus(resp.StatusCode(), resp)
}

// transportClasses maps proxy.Classify's names to classes.
var transportClasses = map[string]Class{
	proxy.FailConnect:   Connect,
	proxy.FailTimeout:   Timeout,
	proxy.FailTransport: Transport,
	proxy.FailOverload:  Overload,
	proxy.FailConfig:    Config,
	proxy.FailInvalid:   Invalid,
	proxy.FailCancelled: Cancelled,
}

func classifyErr(err error) Failure {
	if re, ok := proxy.Reported(err); ok {
		return classifyReported(re.Info)
	}
	switch {
	case proxy.IsInvalid(err):
		return Of(Invalid)
	case errors.Is(err, proxy.ErrStreamTimeout):
		return Of(Timeout)
	}
	if c, ok := transportClasses[proxy.Classify(err)]; ok {
		return Of(c)
	}
	return Of(Transport)
}

// classifyStatus reads a non-200 answer. refusal says the provider refused the input (400,
// 413, 422, or a context overflow whatever the status): the client's error, which every
// route would give.
func classifyStatus(status int, resp *fasthttp.Response) Failure {
	var (
		info  dialect.Error
		known bool
	)
	if status != 429 && status != 503 && status != 504 {
		info, known = dialect.ReadError(errorBody(resp))
	}
	switch {
	case status == 400 || status == 422 || status == 413 || known && info.Overflow:
		return Of(Refused).WithClient(providerRefusal(status, info, known))
	case status == 429:
		if ra := proxy.RetryAfter(resp); ra > 0 {
			return Of(RateLimited).WithClient(ErrProviderRateLimited.WithRetryAfter(ra))
		}
		return Of(RateLimited)
	case status == 503:
		return Of(Unavailable).WithClient(ErrProviderUnavailable.WithRetryAfter(max(proxy.RetryAfter(resp), 1)))
	case status == 504:
		return Of(GatewayTime)
	case status == 502:
		return Of(BadGateway).WithClient(providerFailure(info, known))
	case status >= 500:
		return Of(ServerError).WithClient(providerFailure(info, known))
	}
	return Of(ClientError).WithClient(providerFailure(info, known))
}

// classifyReported reads an error a server reported as its stream's first event: nothing
// reached the client, so it is answered like a failed status.
func classifyReported(info dialect.Error) Failure {
	switch st := ReportedStatus(info); {
	case st == 400 || st == 413 || st == 422:
		return Of(Refused).WithClient(providerRefusal(st, info, true))
	case st == 429:
		return Of(RateLimited)
	default:
		return Of(Reported).WithClient(providerFailure(info, true))
	}
}

// ReportedStatus is the status an error a server reported inside a 200 stream stands for:
// its own (code, http_status_code), 400 for a context overflow or a validation error, else
// 500.
func ReportedStatus(info dialect.Error) int {
	switch {
	case info.Overflow:
		return 400
	case info.Status == 422 && !strings.Contains(strings.ToLower(info.Message), "validation"):
		// TGI gives every error inside a stream 422, generation failures too.
		return 500
	case info.Status != 0:
		return info.Status
	case info.Type == "validation" || strings.Contains(info.Type, "BadRequest") || info.Type == "invalid_request_error":
		return 400
	}
	return 500
}

// providerRefusal is the client's error for an upstream's refusal of the input: 400 (413
// kept) with the server's message.
func providerRefusal(status int, info dialect.Error, known bool) *apierror.Error {
	msg := ErrProviderRefused.Message
	if known && info.Message != "" {
		msg += ": " + Truncate(info.Message, 500)
	}
	st := 400
	if status == 413 && !info.Overflow {
		st = 413
	}
	return apierror.New(st, apierror.TypeInvalidRequest, apierror.CodeProviderRejected, msg)
}

// providerFailure is ErrProviderFailed with the server's message, when it gave one.
func providerFailure(info dialect.Error, known bool) *apierror.Error {
	if !known || info.Message == "" {
		return ErrProviderFailed
	}
	return apierror.New(502, apierror.TypeUpstream, apierror.CodeProviderError,
		ErrProviderFailed.Message+": "+Truncate(info.Message, 500))
}

// maxErrorRead bounds how much of a failed upstream answer's body is read for its message.
const maxErrorRead = 64 << 10

// ErrorReadWait bounds the wait for a streamed error body: a server that sends a failed
// status and then stalls does not hold the request. A variable for tests.
var ErrorReadWait = 2 * time.Second

var errErrorBodySlow = errors.New("outcome: upstream error body too slow")

// errorBody returns (up to maxErrorRead of) a failed upstream answer's body, also when it
// was opened as a stream (read for at most ErrorReadWait).
func errorBody(resp *fasthttp.Response) []byte {
	bs := resp.BodyStream()
	if !resp.StreamBody || bs == nil {
		return resp.Body()
	}
	if c, ok := bs.(interface{ CloseWithError(error) error }); ok {
		t := time.AfterFunc(ErrorReadWait, func() { _ = c.CloseWithError(errErrorBodySlow) })
		defer t.Stop()
	}
	b, _ := io.ReadAll(io.LimitReader(bs, maxErrorRead))
	return b
}

// Truncate cuts s to at most n bytes.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
