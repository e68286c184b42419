package apierror

// Failures both planes answer, worded once: each plane's errors file names these rather
// than writing its own (deploy/conformance compares the planes' answers).
var (
	ErrEndpointNotFound = New(404, TypeNotFound, CodeEndpointNotFound, "unknown endpoint")
	ErrMethodNotAllowed = New(405, TypeInvalidRequest, CodeMethodNotAllowed,
		"method not allowed on this endpoint; see the Allow header")
	ErrInternal = New(500, TypeAPI, CodeInternal, "internal error; try again later")
)
