package server

import (
	"strconv"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/jsonenc"
)

// This file is the edge's side of the servers' dialects (dataplane/dialect): the client's
// answer to an error a server reported, in a body or inside its stream, and the end of a
// stream that did not complete.

// streamEndEvent is the error event that ends a stream of client endpoint e with msg:
// chat and text completions get a data line with the interface's error envelope (the
// OpenAI SDKs raise it), Messages-style an error event, Responses-style response.failed
// (the protocol's failure end) for response id, with the next sequence number seq.
func streamEndEvent(e index.Endpoint, msg, id string, seq int) []byte {
	ae := apierror.New(502, apierror.TypeUpstream, apierror.CodeProviderError, msg)
	switch e {
	case index.EPMessages:
		return []byte("event: error\ndata: " + string(ae.JSON(true)) + "\n\n")
	case index.EPResponses:
		b := []byte(`event: response.failed` + "\n" + `data: {"type":"response.failed","sequence_number":`)
		b = strconv.AppendInt(b, int64(seq), 10)
		b = append(b, `,"response":{"id":`...)
		b = jsonenc.AppendString(b, id)
		b = append(b, `,"object":"response","status":"failed","error":{"code":"server_error","message":`...)
		b = jsonenc.AppendString(b, msg)
		return append(b, `},"output":[]}}`+"\n\n"...)
	}
	return []byte("data: " + string(ae.JSON(false)) + "\n\n")
}
