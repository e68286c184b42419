// Package translate serves Messages-style and Responses-style requests on routes whose
// upstream speaks only chat completions (vLLM, llama.cpp server, Ollama): it rewrites the
// request into a chat completions request and the chat answer, whole or streamed, back into
// the client's protocol. Billed tokens come from dataplane/tokens.
//
// The package is pure: no I/O, no clocks except a fallback creation time, no globals that
// change. Request translators return errors wrapping ErrUnsupported for input that cannot be
// expressed in chat completions (the edge answers 400); response translators return errors
// wrapping ErrUpstream for answers that are not valid chat completions (the edge answers 502,
// or ends a started stream without its terminal event).
package translate

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/reqparse"
)

// Sentinel errors.
var (
	// ErrUnsupported: the request uses a feature that has no chat completions equivalent.
	ErrUnsupported = errors.New("not supported through chat completions translation")
	// ErrInvalidRequest: the request body is not a JSON object (reqparse normally refuses
	// such bodies first).
	ErrInvalidRequest = errors.New("invalid request body")
	// ErrUpstream: the upstream's answer is not a valid chat completion or chunk, or
	// reported an error inside a stream.
	ErrUpstream = errors.New("invalid upstream answer")
)

// parseObject validates b (depth-bounded, see reqparse.ValidJSON) and returns it as an
// object, or ok false.
func parseObject(b []byte) (gjson.Result, bool) {
	if !reqparse.ValidJSON(b) {
		return gjson.Result{}, false
	}
	r := gjson.ParseBytes(b)
	return r, r.IsObject()
}

// parseChunk is parseObject for one chunk of a stream, read in place rather than copied:
// the chunk must not change during Feed, and a translator keeps no string of the result
// past Feed without cloning it (such strings point into the caller's buffer, which the
// relay reuses for the next event).
func parseChunk(b []byte) (gjson.Result, bool) {
	if !reqparse.ValidJSON(b) {
		return gjson.Result{}, false
	}
	r := gjson.Parse(unsafe.String(unsafe.SliceData(b), len(b)))
	return r, r.IsObject()
}

// marshal encodes v as compact JSON without HTML escaping (the output goes to API clients,
// not into HTML pages, and stays readable in golden files).
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// idSuffix derives the suffix of the IDs the gateway hands out from the upstream's chat
// completion ID (dropping vendor prefixes such as "chatcmpl-"), so that every event of one
// answer carries related IDs. An ID that is not plain alphanumerics after its prefix is
// hashed; a missing one is replaced by random hex.
func idSuffix(upstreamID string) string {
	s := upstreamID
	if i := strings.LastIndexAny(s, "-_"); i >= 0 {
		s = s[i+1:]
	}
	ok := s != "" && len(s) <= 64
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		ok = c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	if ok {
		return s
	}
	if upstreamID != "" {
		sum := sha256.Sum256([]byte(upstreamID))
		return hex.EncodeToString(sum[:12])
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// rawOr returns the raw JSON of r, or def when r is absent or null.
func rawOr(r gjson.Result, def string) json.RawMessage {
	if !r.Exists() || r.Type == gjson.Null {
		if def == "" {
			return nil
		}
		return json.RawMessage(def)
	}
	return json.RawMessage(r.Raw)
}

// given reports whether an optional field is present and not null.
func given(r gjson.Result) bool { return r.Exists() && r.Type != gjson.Null }
