package dialect

import (
	"strings"

	"github.com/tidwall/gjson"
)

// Error is what a server said about a failed request, in a body or in a stream event.
type Error struct {
	// Status is the HTTP status the server gave the error (its code, http_status_code or
	// the response status); 0 when it named none.
	Status int
	// Message is the server's own message ("" when it sent none).
	Message string
	// Type is the server's error type or class (BadRequestError, validation,
	// exceed_context_size_error, ...).
	Type string
	// Overflow says the prompt and output limit do not fit the model's context window: the
	// request fails on every route, so it is the client's error (400), never failed over.
	Overflow bool
}

// maxErrorBody bounds what is read of an error body or event.
const maxErrorBody = 64 << 10

// ReadError reads an error in any of the shapes the servers send, and reports whether b
// is one:
//
//	vLLM      {"error":{"message":..,"type":"BadRequestError","param":null,"code":400}}
//	SGLang    {"object":"error","message":..,"type":"BadRequestError","param":null,"code":400}
//	llama.cpp {"error":{"code":400,"message":..,"type":"exceed_context_size_error","n_prompt_tokens":..,"n_ctx":..}}
//	TGI       {"error":"..","error_type":"validation"}  (bodies, older streams)
//	          {"error":{"message":..,"http_status_code":422}}  (streams)
//	Ollama    {"error":{"message":..,"type":"api_error","param":null,"code":null}}
//
// plus FastAPI's {"detail": ..} and a bare {"message": ..}. Null members are absent.
func ReadError(b []byte) (Error, bool) {
	if len(b) == 0 || len(b) > maxErrorBody || !gjson.ValidBytes(b) {
		return Error{}, false
	}
	root := gjson.ParseBytes(b)
	if !root.IsObject() {
		return Error{}, false
	}
	var e Error
	switch errv := root.Get("error"); {
	case errv.Type == gjson.String:
		e.Message, e.Type = errv.Str, str(root.Get("error_type"))
		e.Status = status(root.Get("http_status_code"))
	case errv.IsObject():
		e.Message, e.Type = str(errv.Get("message")), str(errv.Get("type"))
		e.Status = status(errv.Get("code"))
		if s := status(errv.Get("http_status_code")); s != 0 {
			e.Status = s
		}
		if nctx := errv.Get("n_ctx"); nctx.Type == gjson.Number && e.Message != "" {
			// llama.cpp names the window beside its message.
			if np := errv.Get("n_prompt_tokens"); np.Type == gjson.Number {
				e.Message += " (prompt " + np.Raw + " tokens, context window " + nctx.Raw + " tokens)"
			} else {
				e.Message += " (context window " + nctx.Raw + " tokens)"
			}
		}
		code := str(errv.Get("code")) // OpenAI's string codes (context_length_exceeded)
		if e.Type == "" {
			e.Type = code
		}
		e.Overflow = overflow(code, "")
	case str(root.Get("object")) == "error":
		e.Message, e.Type, e.Status = str(root.Get("message")), str(root.Get("type")), status(root.Get("code"))
	default:
		d := root.Get("detail")
		switch {
		case d.Type == gjson.String:
			e.Message = d.Str
		case d.IsArray() && d.Get("0.msg").Type == gjson.String:
			e.Message = d.Get("0.msg").Str
		case str(root.Get("message")) != "":
			e.Message = root.Get("message").Str
		default:
			return Error{}, false
		}
	}
	e.Overflow = e.Overflow || overflow(e.Type, e.Message)
	return e, true
}

// str is r's string, "" for anything else (null included).
func str(r gjson.Result) string {
	if r.Type == gjson.String {
		return r.Str
	}
	return ""
}

// status reads an HTTP status from a number member (or a numeric string), 0 otherwise.
func status(r gjson.Result) int {
	var n int64
	switch r.Type {
	case gjson.Number:
		n = r.Int()
	case gjson.String:
		for _, c := range r.Str {
			if c < '0' || c > '9' || n > 999 {
				return 0
			}
			n = n*10 + int64(c-'0')
		}
	}
	if n < 100 || n > 599 {
		return 0
	}
	return int(n)
}

// overflowSigns are what each server says when the prompt does not fit: vLLM "This model's
// maximum context length is N tokens", SGLang "is longer than the model's context length",
// llama.cpp exceed_context_size_error ("exceeds the available context size"), TGI
// "`inputs` tokens + `max_new_tokens` must be <= N", OpenAI context_length_exceeded.
var overflowSigns = []string{
	"context_length_exceeded", "exceed_context_size", "maximum context length", "context length",
	"context size", "context window", "max_new_tokens` must be <=", "prompt is too long", "too many tokens",
}

func overflow(typ, msg string) bool {
	s := strings.ToLower(typ + " " + msg)
	for _, sign := range overflowSigns {
		if strings.Contains(s, sign) {
			return true
		}
	}
	return false
}
