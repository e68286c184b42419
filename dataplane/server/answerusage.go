package server

import (
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/reqparse"
	"github.com/sekgate/gateway/dataplane/tokens"
)

// answerUsage reads the usage of a whole (non-streaming) answer that reqparse.ScanEvent
// accepted into m: the scan noted where the answer's top-level members are, so only the
// usage member is parsed, not the answer again (gjson.Get walked the whole answer, its
// choices included). Where the notes cannot tell (an escaped key, many members) or the
// answer is not an object starting at its first byte, the answer is read as before
// (tokens.FromBody).
func answerUsage(e index.Endpoint, body []byte, m *reqparse.EventMembers) (tokens.Usage, bool) {
	if len(body) == 0 || body[0] != '{' {
		return tokens.FromBody(e, body)
	}
	u, found, known := m.Member(body, "usage")
	if !known {
		return tokens.FromBody(e, body)
	}
	if !found {
		return tokens.FromEndpoint(e, gjson.Result{})
	}
	// Read before the answer is released, so the usage object need not be copied.
	return tokens.FromEndpoint(e, gjson.Parse(unsafe.String(unsafe.SliceData(u), len(u))))
}
