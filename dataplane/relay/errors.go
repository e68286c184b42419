package relay

import (
	"errors"

	"github.com/sekgate/gateway/shared/apierror"
)

// ErrShuttingDown ends a stream still open when the node's drain timeout ran out, as an
// error event in the client's protocol.
var ErrShuttingDown = apierror.Fixed(apierror.New(503, apierror.TypeOverloaded, apierror.CodeNotReady,
	"the gateway node is shutting down; the output is incomplete, retry the request"))

// Causes the relay records, never sent as such .
var (
	errClientGone           = errors.New("client went away")
	errResponseNotCompleted = errors.New("translated response ended incomplete")
)
