// Package reqparse reads and validates inference request bodies with minimal parsing: it
// looks at the fields routing, limits and metering need and leaves the rest of the body
// untouched, so same-protocol requests are forwarded byte for byte.
//
// Parse validates the JSON in one scan (scan.go: grammar, nesting and strict values, no
// allocation) and then walks the raw bytes; on a valid body it allocates only the returned
// model name. Every refusal is a 400 invalid_request_error naming the offending param
// (nested params look like "messages[2].content" or "questions.q1"), or a 413 for a body
// over MaxBodyBytes.
//
// Choices made where the interface is silent:
//   - JSON null counts as absent for every optional field (SDKs and frameworks send nulls).
//   - A key the gateway reads (model, stream, max_tokens, store, tools, ...) may appear only
//     once per object: the gateway reads the first occurrence while many upstream parsers
//     keep the last, so a duplicate could route or meter a request other than the one run.
//   - Arrays of messages (chat, Messages-style) and of Responses input items may not be empty.
//   - Integers follow JSON Schema: a number without a fractional part, so 1.0 is accepted;
//     an integer must fit an int64 (seed may use all of it); token and dimension counts
//     (max_tokens, max_completion_tokens, max_output_tokens, dimensions) are at most
//     MaxCount (2^31-1) and chat n at most 128.
//   - temperature is a number from 0 to 2 (0 to 1 on Messages-style), top_p from 0 to 1.
//   - Text anywhere in the body, key names included, must be valid UTF-8 and \u escapes
//     must not be lone surrogates; every number anywhere in the body must be finite as a
//     float64 (1e999 is refused). See values.go.
//   - Chat n is passed through (billing follows upstream usage, which covers every choice)
//     but must be an integer from 1 to 128 when present.
//   - Chat max_completion_tokens is checked like max_tokens and wins when both are sent
//     (as in OpenAI and vLLM).
//   - Remote inputs refused on /v1/responses: input_image with file_id or with an image_url
//     that is not a data: URL, input_file with file_id or file_url, and item_reference
//     items (references to stored items); stored prompt templates (prompt) too.
//   - Remote inputs refused on /v1/messages and count_tokens: image and document blocks
//     whose source.type is "url" or "file" (the service stores no files), also inside
//     tool_result content; non-empty mcp_servers (a hosted connector) is refused.
//   - Nesting deeper than MaxDepth levels is refused before any recursive parser runs.
package reqparse

import (
	"math"
	"strconv"
	"strings"

	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/snapshot"
)

// EndpointCountTokens is the Messages-style token count path. It is not an inference
// protocol of models and routes (so it is not among the snapshot's endpoints), but its body
// is validated here like the others.
const EndpointCountTokens = "/v1/messages/count_tokens"

// Body size limits of the interface.
const (
	MaxBodyDefault   = 8 << 20   // chat, completions, embeddings, responses, messages
	MaxBodySystemOne = 128 << 10 // /v1/systemone
)

// MaxBodyBytes returns the largest body accepted on endpoint; larger bodies get 413.
func MaxBodyBytes(endpoint string) int {
	if endpoint == snapshot.EndpointSystemOne {
		return MaxBodySystemOne
	}
	return MaxBodyDefault
}

// Request is what the gateway needs to know about a validated inference request.
type Request struct {
	Endpoint string // snapshot.Endpoint* path (or EndpointCountTokens) the request came in on
	Model    string // model field as sent (canonical ID or alias); owns its memory
	Stream   bool
	// IncludeUsage reports stream_options.include_usage (chat and completions).
	IncludeUsage bool
	// MaxTokens is the output limit the client set (max_tokens, max_completion_tokens — the
	// smaller when both are set — or max_output_tokens), else 0.
	MaxTokens int64
	// LengthFields reports a top-level length field besides max_tokens and
	// max_output_tokens: max_completion_tokens, or a model server's own (n_predict,
	// max_new_tokens, num_predict, options, parameters). Only such a body can need
	// proxy.BoundLengths' edit; the others are not searched.
	LengthFields bool
	// Choices is the number of completions a chat request asks for (n), else 0 (one).
	Choices int64
	// InputCount is the number of embedding inputs (embeddings) or of questions (systemone).
	InputCount int
	// PromptBytes is the UTF-8 size of the prompt's text (message and system text, tool
	// results, prompt, input, state), without images and JSON syntax. For embeddings it is
	// the size of the longest input, since each input is embedded on its own.
	PromptBytes int64
	// RemoteMedia is the param of the first content part that makes a model server fetch a
	// remote resource, "" when none (media.go): only routes with allow_remote_media may
	// serve the request.
	RemoteMedia string
	// ExtensionMask has bit i set when the body uses the provider extension
	// snapshot.Extensions[i]; Extensions lists them with their params (content parts first,
	// then top-level fields in the order of snapshot.Extensions). Only
	// routes allowing every one of them may serve the request.
	ExtensionMask uint32
	Extensions    []Extension
	// Prefix locates the prompt's stable start in the body, from which routing takes the
	// request's prefix key (and weighs it by its size): the leading system messages (or the
	// first message), Messages-style system (or first message), Responses instructions
	// (or first input item), the completions prompt. CacheKey locates the client's
	// prompt_cache_key (chat, Responses), which replaces it.
	Prefix, CacheKey Span
}

// PromptBytesPerToken is the divisor of the prompt-size estimate. It is deliberately high
// (English runs about 4 to 4.7 bytes per token, code and most other languages fewer) so
// that the estimate stays below the true count: the gateway refuses only prompts that
// clearly cannot fit and leaves borderline ones to the upstream, which counts exactly.
const PromptBytesPerToken = 5

// EstimatedPromptTokens is a low estimate of the prompt's token count.
func (r Request) EstimatedPromptTokens() int64 { return r.PromptBytes / PromptBytesPerToken }

// maxTokensParam names the output-limit field of the request's protocol.
func (r Request) maxTokensParam() string {
	if r.Endpoint == snapshot.EndpointResponses {
		return "max_output_tokens"
	}
	return "max_tokens"
}

func (r Request) promptParam() string {
	switch r.Endpoint {
	case snapshot.EndpointCompletions:
		return "prompt"
	case snapshot.EndpointEmbeddings, snapshot.EndpointResponses:
		return "input"
	case snapshot.EndpointSystemOne:
		return "state"
	}
	return "messages"
}

// CheckContext applies the context-window rule for a model whose configured window is
// contextTokens (0 or less means unknown: nothing is checked). The request is refused with
// a 400 naming the output-limit param when MaxTokens >= contextTokens (the prompt needs at
// least one token), and naming the prompt param when EstimatedPromptTokens()+MaxTokens >
// contextTokens.
func CheckContext(req Request, contextTokens int64) *apierror.Error {
	if contextTokens <= 0 {
		return nil
	}
	if req.MaxTokens >= contextTokens {
		p := req.maxTokensParam()
		return apierror.InvalidParam(p, p+" ("+strconv.FormatInt(req.MaxTokens, 10)+
			") must be less than the model's context window of "+strconv.FormatInt(contextTokens, 10)+" tokens")
	}
	est := req.EstimatedPromptTokens()
	if est > contextTokens-req.MaxTokens {
		msg := "the prompt (at least " + strconv.FormatInt(est, 10) + " tokens)"
		if req.MaxTokens > 0 {
			msg += " plus " + req.maxTokensParam() + " (" + strconv.FormatInt(req.MaxTokens, 10) + ")"
		}
		return apierror.InvalidParam(req.promptParam(), msg+" exceeds the model's context window of "+
			strconv.FormatInt(contextTokens, 10)+" tokens")
	}
	return nil
}

// Parse validates body for endpoint and returns what routing needs, or an *apierror.Error:
// 413 for a body over MaxBodyBytes(endpoint), else 400 invalid_request_error naming the
// offending param. It never panics and does not retain body.
func Parse(endpoint string, body []byte) (Request, *apierror.Error) {
	if len(body) > MaxBodyBytes(endpoint) {
		return Request{}, apierror.New(413, apierror.TypeTooLarge, apierror.CodeBodyTooLarge,
			"request body exceeds "+strconv.Itoa(MaxBodyBytes(endpoint))+" bytes")
	}
	var obj topObject
	if err := validate(body, &obj); err != nil {
		return Request{}, err
	}
	var err *apierror.Error
	var r Request
	switch endpoint {
	case snapshot.EndpointChat:
		r, err = parseChat(&obj)
	case snapshot.EndpointCompletions:
		r, err = parseCompletions(&obj)
	case snapshot.EndpointEmbeddings:
		r, err = parseEmbeddings(&obj)
	case snapshot.EndpointResponses:
		r, err = parseResponses(&obj)
	case snapshot.EndpointMessages:
		r, err = parseMessages(&obj, false)
	case EndpointCountTokens:
		r, err = parseMessages(&obj, true)
	case snapshot.EndpointSystemOne:
		r, err = parseSystemOne(&obj)
	default:
		return Request{}, apierror.New(404, apierror.TypeNotFound, apierror.CodeEndpointNotFound,
			"no inference endpoint at "+endpoint)
	}
	if err != nil {
		return Request{}, err
	}
	r.Endpoint = endpoint
	r.Model = strings.Clone(r.Model)
	var lf [len(lengthKeys)]string
	obj.pick(lengthKeys[:], lf[:])
	for _, v := range lf {
		r.LengthFields = r.LengthFields || v != ""
	}
	return r, nil
}

// lengthKeys are the top-level keys that hold (or contain) an output length field other
// than max_tokens and max_output_tokens (proxy.BoundLengths edits them).
var lengthKeys = [...]string{"max_completion_tokens", "n_predict", "max_new_tokens", "num_predict", "options", "parameters"}

// validate checks body with the one scan (scan.go) and fills in obj, or returns the
// refusal: too deep, not JSON, not an object, or a value that is not strict (values.go).
func validate(body []byte, obj *topObject) *apierror.Error {
	s := bstr(body)
	obj.s, obj.sr = s, scan(body, true, &obj.top)
	if !obj.sr.ok {
		if nestsTooDeep(s) {
			return apierror.InvalidParam("", "request body nests deeper than "+strconv.Itoa(MaxDepth)+" levels")
		}
		return apierror.InvalidParam("", "request body is not valid JSON")
	}
	if !obj.sr.object {
		return apierror.InvalidParam("", "request body must be a JSON object")
	}
	return obj.sr.valuesErr(s)
}

// Field checks. Each returns nil when the raw value v of param satisfies the rule; absent
// and null values pass every optional check.

func bad(param, msg string) *apierror.Error { return apierror.InvalidParam(param, msg) }

func dupKey(prefix, key string) *apierror.Error {
	return bad(prefix+key, "duplicate key "+strconv.Quote(key))
}

func checkModel(v string) (string, *apierror.Error) {
	if kindOf(v) != kString || len(v) == 2 {
		return "", bad("model", "model is required and must be a non-empty string")
	}
	return str(v), nil
}

func optBool(param, v string) (bool, *apierror.Error) {
	if !given(v) {
		return false, nil
	}
	if kindOf(v) != kBool {
		return false, bad(param, param+" must be a boolean")
	}
	return v == "true", nil
}

func optString(param, v string) *apierror.Error {
	if given(v) && kindOf(v) != kString {
		return bad(param, param+" must be a string")
	}
	return nil
}

func optObject(param, v string) *apierror.Error {
	if given(v) && kindOf(v) != kObject {
		return bad(param, param+" must be an object")
	}
	return nil
}

// optSeed checks seed: an integer that fits an int64 (vLLM's own bound).
func optSeed(v string) *apierror.Error {
	_, err := optIntRange("seed", v, math.MinInt64, math.MaxInt64)
	return err
}

// onlyFalse checks a field whose only accepted value is false.
func onlyFalse(param, v, why string) *apierror.Error {
	if given(v) && v != "false" {
		return bad(param, param+" must be false: "+why)
	}
	return nil
}

// onlyNull checks a field whose only accepted value is null.
func onlyNull(param, v, why string) *apierror.Error {
	if given(v) {
		return bad(param, param+" is not supported: "+why)
	}
	return nil
}

// optStop checks a stop field: a string, an array of strings, or null.
func optStop(param, v string) *apierror.Error {
	switch kindOf(v) {
	case kAbsent, kNull, kString:
		return nil
	case kArray:
		ok := true
		eachElement(v, func(_ int, e string) bool {
			ok = kindOf(e) == kString
			return ok
		})
		if ok {
			return nil
		}
	}
	return bad(param, param+" must be a string, an array of strings, or null")
}

var streamOptionsKeys = []string{"include_usage"}

// optStreamOptions checks stream_options and returns include_usage.
func optStreamOptions(v string) (bool, *apierror.Error) {
	if !given(v) {
		return false, nil
	}
	if kindOf(v) != kObject {
		return false, bad("stream_options", "stream_options must be an object")
	}
	var f [1]string
	if d := pick(v, streamOptionsKeys, f[:]); d != "" {
		return false, dupKey("stream_options.", d)
	}
	return optBool("stream_options.include_usage", f[0])
}

// optArrayOfObjects checks an optional array whose items are all objects.
func optArrayOfObjects(param, v string) *apierror.Error {
	if !given(v) {
		return nil
	}
	if kindOf(v) != kArray {
		return bad(param, param+" must be an array of objects")
	}
	var err *apierror.Error
	eachElement(v, func(i int, e string) bool {
		if kindOf(e) != kObject {
			err = bad(at(param, i, ""), at(param, i, "")+" must be an object")
		}
		return err == nil
	})
	return err
}

// at builds the param name prefix[i]suffix (error paths only).
func at(prefix string, i int, suffix string) string {
	return prefix + "[" + strconv.Itoa(i) + "]" + suffix
}

func firstErr(errs ...*apierror.Error) *apierror.Error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// eachMessage checks a messages array: present, an array of at least one object, each
// without a duplicate of keys (keys[0] must be "role") and with a non-empty string role.
// Message i's fields are read into f (len(f) == len(keys), in the order of keys; the caller
// owns f so that it stays on the stack), then check validates the rest of the message and
// returns the size of its text; the sizes are summed.
func eachMessage(v string, keys, f []string, check func(i int) (int64, *apierror.Error)) (int64, *apierror.Error) {
	switch kindOf(v) {
	case kAbsent, kNull:
		return 0, bad("messages", "messages is required")
	case kArray:
	default:
		return 0, bad("messages", "messages must be an array of message objects")
	}
	var (
		size int64
		err  *apierror.Error
		n    int
	)
	eachObject(v, keys, f, func(i int, m, d string) bool {
		n++
		if kindOf(m) != kObject {
			err = bad(at("messages", i, ""), "each message must be an object")
			return false
		}
		if d != "" {
			err = dupKey(at("messages", i, "."), d)
			return false
		}
		if kindOf(f[0]) != kString || len(f[0]) == 2 {
			err = bad(at("messages", i, ".role"), "role is required and must be a non-empty string")
			return false
		}
		var sz int64
		sz, err = check(i)
		size += sz
		return err == nil
	})
	if err == nil && n == 0 {
		err = bad("messages", "messages must contain at least one message")
	}
	return size, err
}
