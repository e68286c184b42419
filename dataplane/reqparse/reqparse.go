// Package reqparse reads and validates inference request bodies with minimal parsing: it
// looks at the fields routing, limits and metering need and leaves the rest of the body
// untouched, so same-protocol requests are forwarded byte for byte.
package reqparse

import (
	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Request is what the gateway needs to know about a validated inference request.
type Request struct {
	Endpoint string // snapshot.Endpoint* path the request came in on
	Model    string // model field as sent (canonical ID or alias)
	Stream   bool
	// IncludeUsage reports stream_options.include_usage (chat and completions).
	IncludeUsage bool
	// MaxTokens is max_tokens / max_output_tokens when present, else 0.
	MaxTokens int64
	// InputCount is the number of embedding inputs (embeddings only).
	InputCount int
}

// Parse validates body for endpoint and returns what routing needs, or a 400-class
// *apierror.Error naming the offending param. It never panics on any input.
func Parse(endpoint string, body []byte) (Request, *apierror.Error) {
	if !gjson.ValidBytes(body) {
		return Request{}, apierror.InvalidParam("", "request body is not valid JSON")
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return Request{}, apierror.InvalidParam("", "request body must be a JSON object")
	}
	m := root.Get("model")
	if m.Type != gjson.String || m.Str == "" {
		return Request{}, apierror.InvalidParam("model", "model is required and must be a non-empty string")
	}
	r := Request{Endpoint: endpoint, Model: m.Str, Stream: root.Get("stream").Type == gjson.True}
	switch endpoint {
	case snapshot.EndpointChat, snapshot.EndpointCompletions:
		r.IncludeUsage = root.Get("stream_options.include_usage").Type == gjson.True
		r.MaxTokens = root.Get("max_tokens").Int()
	}
	return r, nil
}
