package catalog

import (
	"bytes"
	"encoding/json"
	"math"

	"gopkg.in/yaml.v3"

	"github.com/sekgate/gateway/shared/snapshot"
)

// DecodeLimits reads request limits as JSON ({requests_per_second, burst, max_concurrent},
// unknown fields refused) and checks them: no negative, infinite or NaN values.
func DecodeLimits(b []byte) (snapshot.Limits, error) {
	var l snapshot.Limits
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return l, &Error{Param: "limits", Message: "malformed limits: " + err.Error()}
	}
	if dec.More() {
		return l, &Error{Param: "limits", Message: "trailing data after the limits"}
	}
	if !(l.RequestsPerSecond >= 0) || math.IsInf(l.RequestsPerSecond, 0) || l.Burst < 0 || l.MaxConcurrent < 0 {
		return l, &Error{Param: "limits", Message: "limits must be non-negative requests_per_second, burst and max_concurrent"}
	}
	return l, nil
}

// ParseLimitsYAML reads a limits file (configs/limits.default.yaml) of the same shape.
func ParseLimitsYAML(b []byte) (snapshot.Limits, error) {
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		return snapshot.Limits{}, &Error{Param: "limits", Message: "malformed limits YAML: " + err.Error()}
	}
	if v == nil {
		return snapshot.Limits{}, nil // an empty file: unlimited
	}
	j, err := json.Marshal(v)
	if err != nil {
		return snapshot.Limits{}, &Error{Param: "limits", Message: "limits YAML has no JSON form: " + err.Error()}
	}
	return DecodeLimits(j)
}
