// Package httpjson owns how the control plane's HTTP handlers answer: JSON bodies, the
// interface's error envelope, and the check of the absolute URLs they put in answers.
package httpjson

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sekgate/gateway/shared/apierror"
)

// WriteJSON answers status with v encoded as JSON and a trailing newline. A value that
// cannot be encoded is answered with ErrInternal.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		WriteError(w, ErrInternal)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// WriteError answers e as the interface's error envelope, with Retry-After when e asks for it.
func WriteError(w http.ResponseWriter, e *apierror.Error) {
	b := e.JSON(false)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	w.WriteHeader(e.Status)
	w.Write(append(b, '\n'))
}

// CheckAbsURL reports an error unless s is an absolute http or https URL with a host.
func CheckAbsURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	return nil
}
