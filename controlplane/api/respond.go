package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/sekgate/gateway/controlplane/catalog"
	"github.com/sekgate/gateway/controlplane/httpjson"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/apierror"
)

// The answer writers are httpjson's; the short names keep the many handlers readable.
var (
	writeJSON  = httpjson.WriteJSON
	writeError = httpjson.WriteError
)

func invalid(param, format string, args ...any) *apierror.Error {
	return apierror.InvalidParam(param, fmt.Sprintf(format, args...))
}

func notFound(what string) *apierror.Error {
	return apierror.New(http.StatusNotFound, apierror.TypeNotFound, apierror.CodeNotFound, what+" not found.")
}

// storeError chooses the status of a store error: the edge is the only place that does.
func (s *server) storeError(w http.ResponseWriter, r *http.Request, err error, what string) {
	var ce *catalog.Error
	switch {
	case errors.As(err, &ce):
		writeError(w, catalogueError(ce))
	case errors.Is(err, store.ErrNotFound):
		writeError(w, notFound(what))
	case errors.Is(err, store.ErrConflict):
		writeError(w, apierror.New(http.StatusConflict, apierror.TypeInvalidRequest, apierror.CodeConflict, err.Error()))
	case errors.Is(err, store.ErrInvalid):
		writeError(w, apierror.New(http.StatusBadRequest, apierror.TypeInvalidRequest, "", err.Error()))
	case r.Context().Err() != nil:
		// The client went away; nothing useful to answer.
		writeError(w, httpjson.ErrCancelled)
	default:
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, httpjson.ErrUnavailable)
	}
}

// catalogueError is the answer to a catalogue problem: the message starts with its line
// and column in the body when known ("line 3, column 17: must be an integer, got \"8k\"").
func catalogueError(ce *catalog.Error) *apierror.Error {
	param, msg := ce.Param, ce.Message
	if param == "" {
		param = "body"
	}
	if w := ce.Where(); w != "" {
		msg = w + ": " + msg
	}
	return invalid(param, "%s", msg)
}

// readBody reads a request body of at most limit bytes. It writes the error answer itself
// and reports whether to go on.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		writeError(w, invalid("body", "Could not read the request body."))
		return nil, false
	}
	if int64(len(body)) > limit {
		writeError(w, apierror.New(http.StatusRequestEntityTooLarge, apierror.TypeTooLarge, apierror.CodeBodyTooLarge,
			fmt.Sprintf("The request body is larger than %d bytes.", limit)))
		return nil, false
	}
	return body, true
}

// decodeJSON reads a JSON body of at most limit bytes into v, refusing unknown fields and
// trailing data. It writes the error answer itself and reports whether to go on.
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) bool {
	return decodeBody(w, r, limit, v, true)
}

// decodeBody is decodeJSON with unknown fields optionally allowed (node payloads, so a
// newer node's extra fields never block its usage spool).
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any, strict bool) bool {
	body, ok := readBody(w, r, limit)
	if !ok {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		writeError(w, invalid(jsonParam(err), "Malformed JSON body: %v.", err))
		return false
	}
	if dec.More() {
		writeError(w, invalid("body", "Unexpected data after the JSON body."))
		return false
	}
	return true
}

func jsonParam(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return te.Field
	}
	return "body"
}
