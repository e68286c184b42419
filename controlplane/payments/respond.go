package payments

import (
	"net/http"

	"github.com/sekgate/gateway/controlplane/httpjson"
)

// methodNotAllowed answers a method other than POST: 204 for OPTIONS, 405 otherwise, both
// with Allow.
func methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Allow", "OPTIONS, POST")
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	httpjson.WriteError(w, httpjson.ErrMethodNotAllowed)
}
