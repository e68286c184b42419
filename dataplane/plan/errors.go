package plan

import "github.com/sekgate/gateway/shared/apierror"

// Planning's refusals.
var (
	ErrModelNotFound = apierror.Fixed(apierror.New(404, apierror.TypeNotFound, apierror.CodeModelNotFound,
		"the model does not exist or is not available to this account").WithParam("model"))
	ErrUnsupportedProtocol = apierror.Fixed(apierror.New(400, apierror.TypeInvalidRequest, apierror.CodeUnsupportedProtocol,
		"no approved route of this model supports this protocol").WithParam("model"))
	ErrNoTokenCounting = apierror.Fixed(apierror.New(400, apierror.TypeInvalidRequest, apierror.CodeUnsupportedProtocol,
		"token counting is not supported by any route of this model; it is not an estimator").WithParam("model"))
)
