package simulator

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// Knobs shape how the simulator answers. The server's knobs apply to every request; each can
// be overridden per request by a header (X-Sim-*) or by the request body's extension object
// "sim" (e.g. {"sim": {"status": 503}}), so tests can script faults per request even when only
// the body reaches the simulator. Headers win over the body.
type Knobs struct {
	// LatencyMS delays every answer (before the status line) by this many milliseconds.
	// Header X-Sim-Latency-Ms, body sim.latency_ms.
	LatencyMS int `json:"latency_ms"`
	// TTFTMS is the time to first token: streams send their headers after LatencyMS, then
	// wait TTFTMS before the first event; non-streaming answers wait it too.
	// Header X-Sim-TTFT-Ms, body sim.ttft_ms.
	TTFTMS int `json:"ttft_ms"`
	// TokensPerSecond paces generated tokens: one streamed token event every 1/TokensPerSecond
	// seconds (non-streaming answers wait for the whole output). 0 means unpaced.
	// Header X-Sim-Tokens-Per-Second, body sim.tokens_per_second.
	TokensPerSecond float64 `json:"tokens_per_second"`
	// ErrorRate is the fraction (0..1) of requests answered with ErrorStatus.
	// Header X-Sim-Error-Rate, body sim.error_rate.
	ErrorRate float64 `json:"error_rate"`
	// ErrorStatus is the status of ErrorRate's failures (default 503).
	ErrorStatus int `json:"error_status"`
	// Status, when non-zero and not 200, fails every request with this status.
	// Header X-Sim-Status, body sim.status.
	Status int `json:"status"`
	// RetryAfterS, when positive, is sent as Retry-After (seconds) on injected errors.
	// Header X-Sim-Retry-After, body sim.retry_after.
	RetryAfterS int `json:"retry_after"`
	// OutputTokens is the length of generated answers in tokens (default 16), before
	// max_tokens / max_output_tokens cut it (finish reason length / max_tokens).
	// Header X-Sim-Output-Tokens, body sim.output_tokens.
	OutputTokens int `json:"output_tokens"`
	// FailAfterEvents, when positive, breaks streams after this many SSE events: the
	// connection is closed without a terminal event. Non-streaming answers are cut after
	// half their body. Header X-Sim-Fail-After-Events (0 there means DropConnection),
	// body sim.fail_after_events.
	FailAfterEvents int `json:"fail_after_events"`
	// DropConnection closes the connection without any answer (a transport failure).
	// Header X-Sim-Drop: 1, body sim.drop.
	DropConnection bool `json:"drop_connection"`
	// Malformed answers non-streaming requests with 200 and a body that is not JSON.
	// Header X-Sim-Malformed: 1, body sim.malformed.
	Malformed bool `json:"malformed"`

	// Hostile-upstream knobs (make chaos, money-integrity tests).

	// UsagePromptTokens and UsageCompletionTokens, when set, replace the token counts the
	// answer's usage reports (chat and completions, streaming and not) with this JSON
	// number as written: "-5", "9223372036854775807", "1e999", "99999999999999999999".
	// Header X-Sim-Usage-Prompt-Tokens / X-Sim-Usage-Completion-Tokens, body
	// sim.usage_prompt_tokens / sim.usage_completion_tokens.
	UsagePromptTokens     string `json:"usage_prompt_tokens"`
	UsageCompletionTokens string `json:"usage_completion_tokens"`
	// GarbageAfterEvents, when positive, sends an event whose data is not JSON after this
	// many events of a stream, then goes on with the stream.
	// Header X-Sim-Garbage-After-Events, body sim.garbage_after_events.
	GarbageAfterEvents int `json:"garbage_after_events"`
	// TruncateAfterEvents, when positive, sends half of the next event after this many
	// events of a stream and closes the connection.
	// Header X-Sim-Truncate-After-Events, body sim.truncate_after_events.
	TruncateAfterEvents int `json:"truncate_after_events"`
	// ContentType, when set, replaces the Content-Type of successful answers (e.g.
	// text/html on a stream). Header X-Sim-Content-Type, body sim.content_type.
	ContentType string `json:"content_type"`
}

// jsonNumber matches a JSON number literal (any size); usage overrides must be one.
var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// maxOutputTokens bounds per-request output lengths.
const maxOutputTokens = 1 << 20

// withDefaults fills zero values that have a default.
func (k Knobs) withDefaults() Knobs {
	if k.ErrorStatus == 0 {
		k.ErrorStatus = http.StatusServiceUnavailable
	}
	if k.OutputTokens <= 0 {
		k.OutputTokens = 16
	}
	if k.LatencyMS < 0 {
		k.LatencyMS = 0
	}
	if k.TTFTMS < 0 {
		k.TTFTMS = 0
	}
	if k.TokensPerSecond < 0 {
		k.TokensPerSecond = 0
	}
	if k.FailAfterEvents < 0 {
		k.FailAfterEvents = 0
	}
	return k
}

// tokenDelay is the pause between two generated tokens.
func (k *Knobs) tokenDelay() time.Duration {
	if k.TokensPerSecond <= 0 {
		return 0
	}
	return time.Duration(float64(time.Second) / k.TokensPerSecond)
}

// override applies per-request overrides from the body's "sim" object, then from headers.
func (k *Knobs) override(h http.Header, body gjson.Result) {
	if s := body.Get("sim"); s.IsObject() {
		s.ForEach(func(key, v gjson.Result) bool {
			k.set(key.Str, v.String())
			return true
		})
	}
	for name, vals := range h {
		if len(name) > 6 && name[:6] == "X-Sim-" && len(vals) > 0 {
			k.setHeader(name, vals[0])
		}
	}
}

func (k *Knobs) setHeader(name, v string) {
	switch name {
	case "X-Sim-Latency-Ms":
		k.set("latency_ms", v)
	case "X-Sim-Ttft-Ms":
		k.set("ttft_ms", v)
	case "X-Sim-Tokens-Per-Second":
		k.set("tokens_per_second", v)
	case "X-Sim-Error-Rate":
		k.set("error_rate", v)
	case "X-Sim-Error-Status":
		k.set("error_status", v)
	case "X-Sim-Status":
		k.set("status", v)
	case "X-Sim-Retry-After":
		k.set("retry_after", v)
	case "X-Sim-Output-Tokens":
		k.set("output_tokens", v)
	case "X-Sim-Fail-After-Events":
		k.set("fail_after_events", v)
	case "X-Sim-Drop":
		k.set("drop", v)
	case "X-Sim-Malformed":
		k.set("malformed", v)
	case "X-Sim-Usage-Prompt-Tokens":
		k.set("usage_prompt_tokens", v)
	case "X-Sim-Usage-Completion-Tokens":
		k.set("usage_completion_tokens", v)
	case "X-Sim-Garbage-After-Events":
		k.set("garbage_after_events", v)
	case "X-Sim-Truncate-After-Events":
		k.set("truncate_after_events", v)
	case "X-Sim-Content-Type":
		k.set("content_type", v)
	}
}

func (k *Knobs) set(key, v string) {
	atoi := func() (int, bool) { n, err := strconv.Atoi(v); return n, err == nil && n >= 0 }
	switch key {
	case "latency_ms":
		if n, ok := atoi(); ok {
			k.LatencyMS = n
		}
	case "ttft_ms":
		if n, ok := atoi(); ok {
			k.TTFTMS = n
		}
	case "tokens_per_second":
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
			k.TokensPerSecond = f
		}
	case "error_rate":
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && f <= 1 {
			k.ErrorRate = f
		}
	case "error_status":
		if n, ok := atoi(); ok && n >= 100 && n <= 599 {
			k.ErrorStatus = n
		}
	case "status":
		if n, ok := atoi(); ok && (n == 0 || n >= 100 && n <= 599) {
			k.Status = n
		}
	case "retry_after":
		if n, ok := atoi(); ok {
			k.RetryAfterS = n
		}
	case "output_tokens":
		if n, ok := atoi(); ok && n > 0 && n <= maxOutputTokens {
			k.OutputTokens = n
		}
	case "fail_after_events":
		if n, ok := atoi(); ok {
			if n == 0 {
				k.DropConnection = true
			}
			k.FailAfterEvents = n
		}
	case "drop":
		k.DropConnection = truthy(v)
	case "malformed":
		k.Malformed = truthy(v)
	case "usage_prompt_tokens":
		if len(v) <= 400 && jsonNumber.MatchString(v) {
			k.UsagePromptTokens = v
		}
	case "usage_completion_tokens":
		if len(v) <= 400 && jsonNumber.MatchString(v) {
			k.UsageCompletionTokens = v
		}
	case "garbage_after_events":
		if n, ok := atoi(); ok {
			k.GarbageAfterEvents = n
		}
	case "truncate_after_events":
		if n, ok := atoi(); ok {
			k.TruncateAfterEvents = n
		}
	case "content_type":
		if len(v) <= 200 && !strings.ContainsAny(v, "\r\n") {
			k.ContentType = v
		}
	}
}

func truthy(v string) bool {
	b, err := strconv.ParseBool(v)
	return err == nil && b
}
