package payments

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/sekgate/gateway/shared/apierror"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, apierror.New(http.StatusInternalServerError, apierror.TypeAPI, apierror.CodeInternal, "internal error"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, e *apierror.Error) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	w.WriteHeader(e.Status)
	w.Write(append(e.JSON(false), '\n'))
}

// methodNotAllowed answers a method other than POST: 204 for OPTIONS, 405 otherwise, both
// with Allow.
func methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Allow", "OPTIONS, POST")
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeError(w, apierror.New(http.StatusMethodNotAllowed, apierror.TypeInvalidRequest, apierror.CodeMethodNotAllowed,
		"method "+r.Method+" is not allowed on this path; use POST"))
}
