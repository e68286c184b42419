package relay

import (
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/translate"
)

// protocol is how one committed exchange answers the client.
type Protocol struct {
	// Client is the endpoint the client called.
	Client index.Endpoint
	// Translate is set when the answering route was reached through chat completions.
	Translate bool
	// Model is the model name the client sent; translated answers carry it.
	Model string
	// Opt are a translated answer's options: the answering route's dialect, the request's
	// stop sequences.
	Opt translate.Options
	// maxOutput ends a relayed stream before an event that takes the output delivered past
	// the request's output bound, in tokens (0: none; set by tracked): bound.go.
	maxOutput int64
	// bytesPerToken is the model's output_bytes_per_token (0: the default), with which
	// maxOutput counts.
	bytesPerToken int
}

// answer turns the upstream's complete 200 body (valid JSON, checked by the attempt loop)
// into the client's body. ok is false when the body is not a usable answer.
func (p Protocol) answer(rb []byte) (out []byte, ok bool) {
	if !p.Translate {
		return rb, true
	}
	var err error
	switch p.Client {
	case index.EPMessages:
		out, _, err = translate.ChatToMessagesResponseWith(rb, p.Model, p.Opt)
	case index.EPResponses:
		out, _, err = translate.ChatToResponsesResponseWith(rb, p.Model, p.Opt)
	default:
		return nil, false
	}
	return out, err == nil
}
