package adminapi

import _ "embed"

// openapiDocument is the admin API's OpenAPI 3.1 document, served at
// GET /admin/v1/openapi.json. Edit it by hand with the handlers; the control plane's API
// tests validate every admin response they receive against it.
//
//go:embed openapi.json
var openapiDocument []byte

// OpenAPI returns the admin API's OpenAPI document. The slice is shared: callers must not
// modify it.
func OpenAPI() []byte { return openapiDocument }
