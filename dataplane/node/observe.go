package node

import (
	"context"
	"errors"
	"flag"
	"net/url"
	"os"

	"github.com/sekgate/gateway/dataplane/accesslog"
	"github.com/sekgate/gateway/dataplane/tracing"
)

// observeOptions are the access log's and tracing's flags.
type observeOptions struct {
	accessLog, accessLogFormat string
	accessLogSample            float64
	otlpEndpoint               string
	traceSampleRatio           float64
}

func (o *observeOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.accessLog, "access-log", "stderr", "where the access log goes, one line per inference request: stderr, stdout or off")
	fs.StringVar(&o.accessLogFormat, "access-log-format", "json", "access log lines: json (production) or text (local)")
	fs.Float64Var(&o.accessLogSample, "access-log-sample", 1, "share of successful requests logged, 0 to 1 (failures and refusals are always logged)")
	fs.StringVar(&o.otlpEndpoint, "otlp-endpoint", "", "OTLP/HTTP traces URL of an OpenTelemetry collector (empty: tracing off)")
	fs.Float64Var(&o.traceSampleRatio, "trace-sample-ratio", 0.1, "share of requests traced, 0 to 1 (a client's sampled traceparent is always continued)")
}

func (o *observeOptions) validate() error {
	switch {
	case o.accessLog != "stderr" && o.accessLog != "stdout" && o.accessLog != "off":
		return errors.New("--access-log must be stderr, stdout or off")
	case o.accessLogFormat != "json" && o.accessLogFormat != "text":
		return errors.New("--access-log-format must be json or text")
	case o.accessLogSample < 0 || o.accessLogSample > 1:
		return errors.New("--access-log-sample must be between 0 and 1")
	case o.traceSampleRatio < 0 || o.traceSampleRatio > 1:
		return errors.New("--trace-sample-ratio must be between 0 and 1")
	}
	if o.otlpEndpoint != "" {
		if u, err := url.Parse(o.otlpEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errors.New("--otlp-endpoint must be an http or https URL")
		}
	}
	return nil
}

// openAccessLog opens the access log (nil when off).
func (o *observeOptions) openAccessLog() (*accesslog.Log, error) {
	if o.accessLog == "off" {
		return nil, nil
	}
	w := os.Stderr
	if o.accessLog == "stdout" {
		w = os.Stdout
	}
	sample := o.accessLogSample
	if sample == 0 {
		sample = -1 // none of the successful requests
	}
	return accesslog.New(accesslog.Config{Writer: w, JSON: o.accessLogFormat == "json", Sample: sample}), nil
}

// tracer starts tracing (nil when no endpoint is configured).
func (o *observeOptions) tracer(nodeID, region string) (*tracing.Tracer, error) {
	if o.otlpEndpoint == "" {
		return nil, nil
	}
	return tracing.New(context.Background(), tracing.Config{Endpoint: o.otlpEndpoint, SampleRatio: o.traceSampleRatio,
		NodeID: nodeID, Region: region})
}
