package proxy

import (
	"github.com/tidwall/sjson"

	"github.com/sekgate/gateway/dataplane/index"
)

// warmDrop are the members a warm-up copy goes without: the stream's options, and what
// would make the server generate more than one token (several choices, a minimum).
var warmDrop = []string{"stream_options", "n", "best_of", "min_tokens"}

// WarmBody returns a copy of body, an upstream chat, text-completions or messages request,
// that asks for one output token and no stream: the same prompt, which the server
// prefills (and caches) at the cost of one token (dataplane/routing/warm.go). Other
// endpoints, and a body it cannot edit, have none (false).
func WarmBody(body []byte, e index.Endpoint) ([]byte, bool) {
	if e != index.EPChat && e != index.EPCompletions && e != index.EPMessages {
		return nil, false
	}
	out := append([]byte(nil), body...)
	var err error
	for _, k := range warmDrop {
		if out, err = sjson.DeleteBytes(out, k); err != nil {
			return nil, false
		}
	}
	if out, err = sjson.SetBytes(out, "stream", false); err != nil {
		return nil, false
	}
	if out, err = sjson.SetBytes(out, "max_tokens", 1); err != nil {
		return nil, false
	}
	if out, err = BoundLengths(out, 1); err != nil {
		return nil, false
	}
	return out, true
}
