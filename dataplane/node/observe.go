package node

import (
	"context"
	"errors"
	"net/url"
	"os"

	"github.com/sekgate/gateway/dataplane/accesslog"
	"github.com/sekgate/gateway/dataplane/tracing"
)

// observeOptions are the access log's and tracing's flags.
type observeOptions struct {
	AccessLog        string  `flag:"access-log" default:"stderr" help:"where the access log goes, one line per inference request: stderr, stdout or off"`
	AccessLogFormat  string  `flag:"access-log-format" default:"json" help:"access log lines: json (production) or text (local)"`
	AccessLogSample  float64 `flag:"access-log-sample" default:"1" help:"share of successful requests logged, 0 to 1 (failures and refusals are always logged)"`
	OTLPEndpoint     string  `flag:"otlp-endpoint" help:"OTLP/HTTP traces URL of an OpenTelemetry collector (empty: tracing off)"`
	TraceSampleRatio float64 `flag:"trace-sample-ratio" default:"0.1" help:"share of requests traced, 0 to 1 (a client's sampled traceparent is always continued)"`
}

func (o *observeOptions) validate() error {
	switch {
	case o.AccessLog != "stderr" && o.AccessLog != "stdout" && o.AccessLog != "off":
		return errors.New("--access-log must be stderr, stdout or off")
	case o.AccessLogFormat != "json" && o.AccessLogFormat != "text":
		return errors.New("--access-log-format must be json or text")
	case o.AccessLogSample < 0 || o.AccessLogSample > 1:
		return errors.New("--access-log-sample must be between 0 and 1")
	case o.TraceSampleRatio < 0 || o.TraceSampleRatio > 1:
		return errors.New("--trace-sample-ratio must be between 0 and 1")
	}
	if o.OTLPEndpoint != "" {
		if u, err := url.Parse(o.OTLPEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errors.New("--otlp-endpoint must be an http or https URL")
		}
	}
	return nil
}

// openAccessLog opens the access log (nil when off).
func (o *observeOptions) openAccessLog() (*accesslog.Log, error) {
	if o.AccessLog == "off" {
		return nil, nil
	}
	w := os.Stderr
	if o.AccessLog == "stdout" {
		w = os.Stdout
	}
	sample := o.AccessLogSample
	if sample == 0 {
		sample = -1 // none of the successful requests
	}
	return accesslog.New(accesslog.Config{Writer: w, JSON: o.AccessLogFormat == "json", Sample: sample}), nil
}

// tracer starts tracing (nil when no endpoint is configured).
func (o *observeOptions) tracer(nodeID, region string) (*tracing.Tracer, error) {
	if o.OTLPEndpoint == "" {
		return nil, nil
	}
	return tracing.New(context.Background(), tracing.Config{Endpoint: o.OTLPEndpoint, SampleRatio: o.TraceSampleRatio,
		NodeID: nodeID, Region: region})
}
