package reqparse

import (
	"github.com/sekgate/gateway/shared/apierror"
)

const storeWhy = "the service is stateless and stores nothing"

var chatKeys = withExt([]string{"model", "messages", "store", "stream", "stream_options", "max_tokens",
	"max_completion_tokens", "n", "stop", "temperature", "top_p", "seed", "tools", "response_format", "prompt_cache_key"})

const (
	chModel = iota
	chMessages
	chStore
	chStream
	chStreamOptions
	chMaxTokens
	chMaxCompletionTokens
	chN
	chStop
	chTemperature
	chTopP
	chSeed
	chTools
	chResponseFormat
	chPromptCacheKey
	chNumKeys
)

func parseChat(obj *topObject) (Request, *apierror.Error) {
	var f [chNumKeys + numTopExt]string
	if d := obj.pick(chatKeys, f[:]); d != "" {
		return Request{}, dupKey("", d)
	}
	var r Request
	var err *apierror.Error
	if r.Model, err = checkModel(f[chModel]); err != nil {
		return r, err
	}
	if r.PromptBytes, err = r.chatMessages(f[chMessages]); err != nil {
		return r, err
	}
	if err = optString("prompt_cache_key", f[chPromptCacheKey]); err != nil {
		return r, err
	}
	r.Prefix, r.CacheKey = spanIn(obj.s, leadingMessages(f[chMessages])), stringSpan(obj.s, f[chPromptCacheKey])
	if err = r.topExtensions(f[chNumKeys:]); err != nil {
		return r, err
	}
	if err = onlyFalse("store", f[chStore], storeWhy); err != nil {
		return r, err
	}
	if r.Stream, err = optBool("stream", f[chStream]); err != nil {
		return r, err
	}
	if r.IncludeUsage, err = optStreamOptions(f[chStreamOptions]); err != nil {
		return r, err
	}
	if r.MaxTokens, err = optIntRange("max_tokens", f[chMaxTokens], 1, MaxCount); err != nil {
		return r, err
	}
	mct, err := optIntRange("max_completion_tokens", f[chMaxCompletionTokens], 1, MaxCount)
	if err != nil {
		return r, err
	}
	if mct > 0 && (r.MaxTokens == 0 || mct < r.MaxTokens) {
		// One bound: the smaller of the two. Servers read one or the other (llama.cpp's never
		// reads max_completion_tokens); the forwarded body gets both set to it.
		r.MaxTokens = mct
	}
	if r.Choices, err = optIntRange("n", f[chN], 1, MaxChatChoices); err != nil {
		return r, err
	}
	err = firstErr(
		optStop("stop", f[chStop]),
		optRange("temperature", f[chTemperature], 0, MaxTemperature),
		optRange("top_p", f[chTopP], 0, 1),
		optSeed(f[chSeed]),
		optArrayOfObjects("tools", f[chTools]),
		optObject("response_format", f[chResponseFormat]),
	)
	return r, err
}

var chatMessageKeys = []string{"role", "content", "tool_calls", "tool_call_id"}

// chatPartKeys are the keys of a chat content part the gateway reads: text, then mediaKeys.
var chatPartKeys = append([]string{"text"}, mediaKeys...)

// chatMessages checks the chat messages array and returns the size of its text; it records
// remote media and extensions in r.
func (r *Request) chatMessages(v string) (int64, *apierror.Error) {
	var f [4]string
	return eachMessage(v, chatMessageKeys, f[:], func(i int) (size int64, err *apierror.Error) {
		switch kindOf(f[1]) {
		case kAbsent, kNull:
		case kString:
			size += textLen(f[1])
		case kArray:
			var t [1 + numMediaKeys]string
			eachObject(f[1], chatPartKeys, t[:], func(j int, part, d string) bool {
				if kindOf(part) != kObject {
					err = bad(at("messages", i, at(".content", j, "")), "each content part must be an object")
					return false
				}
				if d != "" {
					err = dupKey(at("messages", i, at(".content", j, ".")), d)
					return false
				}
				size += textLen(t[0])
				if hasMedia(t[1:]) {
					var remote string
					remote, err = r.media(t[1:], func() string { return at("messages", i, at(".content", j, "")) })
					if r.RemoteMedia == "" {
						r.RemoteMedia = remote
					}
				}
				return err == nil
			})
			if err != nil {
				return size, err
			}
		default:
			return size, bad(at("messages", i, ".content"), "content must be a string, an array of content parts, or null")
		}
		if given(f[2]) {
			if e := optArrayOfObjects(at("messages", i, ".tool_calls"), f[2]); e != nil {
				return size, e
			}
		}
		if given(f[3]) && kindOf(f[3]) != kString {
			return size, bad(at("messages", i, ".tool_call_id"), "tool_call_id must be a string")
		}
		return size, nil
	})
}

var completionKeys = withExt([]string{"model", "prompt", "n", "best_of", "echo", "suffix", "logprobs",
	"store", "stream", "stream_options", "temperature", "top_p", "stop", "seed", "max_tokens"})

const (
	coModel = iota
	coPrompt
	coN
	coBestOf
	coEcho
	coSuffix
	coLogprobs
	coStore
	coStream
	coStreamOptions
	coTemperature
	coTopP
	coStop
	coSeed
	coMaxTokens
	coNumKeys
)

func parseCompletions(obj *topObject) (Request, *apierror.Error) {
	var f [coNumKeys + numTopExt]string
	if d := obj.pick(completionKeys, f[:]); d != "" {
		return Request{}, dupKey("", d)
	}
	var r Request
	var err *apierror.Error
	if r.Model, err = checkModel(f[coModel]); err != nil {
		return r, err
	}
	if err = r.topExtensions(f[coNumKeys:]); err != nil {
		return r, err
	}
	switch kindOf(f[coPrompt]) {
	case kString:
		r.PromptBytes = textLen(f[coPrompt])
		r.Prefix = spanIn(obj.s, f[coPrompt])
	case kAbsent, kNull:
		return r, bad("prompt", "prompt is required")
	default:
		return r, bad("prompt", "prompt must be exactly one string; prompt arrays and token IDs are not supported")
	}
	for _, k := range [...]int{coN, coBestOf} {
		if v := f[k]; given(v) {
			if n, ok := asInt(v); !ok || n != 1 {
				return r, bad(completionKeys[k], completionKeys[k]+" must be 1")
			}
		}
	}
	if _, err = optBool("echo", f[coEcho]); err != nil {
		return r, err
	}
	if err = optString("suffix", f[coSuffix]); err != nil {
		return r, err
	}
	if v := f[coLogprobs]; given(v) {
		if n, ok := asInt(v); !ok || n < 0 || n > 5 {
			return r, bad("logprobs", "logprobs must be an integer from 0 to 5")
		}
	}
	if err = onlyFalse("store", f[coStore], storeWhy); err != nil {
		return r, err
	}
	if r.Stream, err = optBool("stream", f[coStream]); err != nil {
		return r, err
	}
	if r.IncludeUsage, err = optStreamOptions(f[coStreamOptions]); err != nil {
		return r, err
	}
	if r.MaxTokens, err = optIntRange("max_tokens", f[coMaxTokens], 1, MaxCount); err != nil {
		return r, err
	}
	err = firstErr(
		optRange("temperature", f[coTemperature], 0, MaxTemperature),
		optRange("top_p", f[coTopP], 0, 1),
		optStop("stop", f[coStop]),
		optSeed(f[coSeed]),
	)
	return r, err
}

// MaxEmbeddingInputs is the most inputs one embeddings request may carry.
const MaxEmbeddingInputs = 128

// embeddingKeys: messages is vLLM's chat-style embedding input, read for remote media.
var embeddingKeys = withExt([]string{"model", "input", "encoding_format", "dimensions", "user", "stream", "messages"})

func parseEmbeddings(obj *topObject) (Request, *apierror.Error) {
	var f [7 + numTopExt]string
	if d := obj.pick(embeddingKeys, f[:]); d != "" {
		return Request{}, dupKey("", d)
	}
	var r Request
	var err *apierror.Error
	if r.Model, err = checkModel(f[0]); err != nil {
		return r, err
	}
	if err = r.topExtensions(f[7:]); err != nil {
		return r, err
	}
	if given(f[6]) {
		if _, err = r.chatMessages(f[6]); err != nil {
			return r, err
		}
	}
	const inputRule = "input must be a non-empty string or an array of 1 to 128 non-empty strings; token arrays are not supported"
	switch in := f[1]; kindOf(in) {
	case kString:
		if len(in) == 2 {
			return r, bad("input", inputRule)
		}
		r.InputCount, r.PromptBytes = 1, textLen(in)
	case kArray:
		eachElement(in, func(i int, e string) bool {
			if kindOf(e) != kString || len(e) == 2 {
				err = bad(at("input", i, ""), inputRule)
				return false
			}
			r.InputCount++
			if r.InputCount > MaxEmbeddingInputs {
				err = bad("input", inputRule)
				return false
			}
			r.PromptBytes = max(r.PromptBytes, textLen(e))
			return true
		})
		if err != nil {
			return r, err
		}
		if r.InputCount == 0 {
			return r, bad("input", inputRule)
		}
	case kAbsent, kNull:
		return r, bad("input", "input is required")
	default:
		return r, bad("input", inputRule)
	}
	if v := f[2]; given(v) && v != `"float"` && v != `"base64"` {
		return r, bad("encoding_format", "encoding_format must be float or base64")
	}
	if _, err = optIntRange("dimensions", f[3], 1, MaxCount); err != nil {
		return r, err
	}
	if err = optString("user", f[4]); err != nil {
		return r, err
	}
	err = onlyFalse("stream", f[5], "streaming is not supported for embeddings")
	return r, err
}
