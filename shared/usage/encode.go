package usage

import (
	"strconv"
	"time"

	"github.com/sekgate/gateway/shared/jsonenc"
)

// AppendJSON appends r's JSON encoding to dst. It produces the same JSON value as
// encoding/json.Marshal(r) (field names, omitempty rules, null key_id, RFC 3339 time with
// nanoseconds) without reflection or allocation beyond dst's growth: records are encoded
// on the request path of every inference request.
func (r *Record) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"request_id":`...)
	dst = jsonenc.AppendString(dst, r.RequestID)
	dst = append(dst, `,"ts":"`...)
	dst = r.TS.AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","account_id":`...)
	dst = jsonenc.AppendString(dst, r.AccountID)
	dst = append(dst, `,"key_id":`...)
	if r.KeyID == nil {
		dst = append(dst, "null"...)
	} else {
		dst = jsonenc.AppendString(dst, *r.KeyID)
	}
	dst = append(dst, `,"model":`...)
	dst = jsonenc.AppendString(dst, r.Model)
	dst = append(dst, `,"endpoint":`...)
	dst = jsonenc.AppendString(dst, r.Endpoint)
	dst = append(dst, `,"stream":`...)
	dst = strconv.AppendBool(dst, r.Stream)
	if r.Provider != "" {
		dst = append(dst, `,"provider":`...)
		dst = jsonenc.AppendString(dst, r.Provider)
	}
	if r.Residency != "" {
		dst = append(dst, `,"residency":`...)
		dst = jsonenc.AppendString(dst, r.Residency)
	}
	dst = append(dst, `,"status":`...)
	dst = strconv.AppendInt(dst, int64(r.Status), 10)
	dst = append(dst, `,"result":`...)
	dst = jsonenc.AppendString(dst, r.Result)
	dst = append(dst, `,"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, r.PromptTokens, 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, r.CompletionTokens, 10)
	dst = append(dst, `,"price_micro_sek":`...)
	dst = strconv.AppendInt(dst, r.PriceMicroSEK, 10)
	dst = append(dst, `,"duration_ms":`...)
	dst = strconv.AppendInt(dst, r.DurationMS, 10)
	if r.TTFTMS != 0 {
		dst = append(dst, `,"ttft_ms":`...)
		dst = strconv.AppendInt(dst, r.TTFTMS, 10)
	}
	if r.Routing != nil {
		dst = append(dst, `,"routing":`...)
		dst = r.Routing.AppendJSON(dst)
	}
	return append(dst, '}')
}

// AppendJSON appends rt's JSON encoding to dst: the same JSON value as
// encoding/json.Marshal(rt), without reflection (the control plane stores every record's
// routing).
func (rt *Routing) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"policy":`...)
	dst = jsonenc.AppendString(dst, rt.Policy)
	if rt.NodeRegion != "" {
		dst = append(dst, `,"node_region":`...)
		dst = jsonenc.AppendString(dst, rt.NodeRegion)
	}
	if rt.Translated {
		dst = append(dst, `,"translated":true`...)
	}
	if rt.UsageEstimated {
		dst = append(dst, `,"usage_estimated":true`...)
	}
	if rt.OutputUnderreported {
		dst = append(dst, `,"output_underreported":true`...)
	}
	if rt.ReportedOutput != 0 {
		dst = append(dst, `,"reported_output_tokens":`...)
		dst = strconv.AppendInt(dst, rt.ReportedOutput, 10)
	}
	if rt.Balancer != "" {
		dst = append(dst, `,"balancer":`...)
		dst = jsonenc.AppendString(dst, rt.Balancer)
	}
	if rt.Reason != "" {
		dst = append(dst, `,"reason":`...)
		dst = jsonenc.AppendString(dst, rt.Reason)
	}
	for _, f := range [...]struct {
		name string
		v    int64
	}{{`,"server_queue":`, rt.ServerQueue}, {`,"in_flight":`, rt.InFlight}, {`,"queued_ms":`, rt.QueuedMS}} {
		if f.v != 0 {
			dst = append(dst, f.name...)
			dst = strconv.AppendInt(dst, f.v, 10)
		}
	}
	dst = append(dst, `,"attempts":`...)
	if rt.Attempts == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range rt.Attempts {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = rt.Attempts[i].appendJSON(dst)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

func (a *Attempt) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"route":`...)
	dst = jsonenc.AppendString(dst, a.Route)
	dst = append(dst, `,"provider":`...)
	dst = jsonenc.AppendString(dst, a.Provider)
	dst = append(dst, `,"region":`...)
	dst = jsonenc.AppendString(dst, a.Region)
	dst = append(dst, `,"status":`...)
	dst = strconv.AppendInt(dst, int64(a.Status), 10)
	if a.Error != "" {
		dst = append(dst, `,"error":`...)
		dst = jsonenc.AppendString(dst, a.Error)
	}
	dst = append(dst, `,"duration_ms":`...)
	dst = strconv.AppendInt(dst, a.DurationMS, 10)
	return append(dst, '}')
}
