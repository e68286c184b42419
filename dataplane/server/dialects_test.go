package server

import "github.com/sekgate/gateway/shared/apierror"

// streamCutError is the error envelope a chat stream cut before its [DONE] ends with.
var streamCutError = apierror.New(502, apierror.TypeUpstream, apierror.CodeProviderError,
	"the provider's stream ended before its last event; the output is incomplete").JSON(false)
