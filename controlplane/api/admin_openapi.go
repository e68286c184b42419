package api

import (
	"net/http"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

// adminOpenAPI serves the admin API's OpenAPI document without authentication: it
// describes the API, it holds no data.
func (s *server) adminOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(adminapi.OpenAPI())
}
