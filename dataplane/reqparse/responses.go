package reqparse

import (
	"strings"

	"github.com/sekgate/gateway/shared/apierror"
)

var responsesKeys = withExt([]string{"model", "input", "instructions", "max_output_tokens", "stream",
	"store", "background", "previous_response_id", "conversation", "tools", "temperature",
	"top_p", "prompt", "prompt_cache_key"})

const (
	rsModel = iota
	rsInput
	rsInstructions
	rsMaxOutputTokens
	rsStream
	rsStore
	rsBackground
	rsPreviousResponseID
	rsConversation
	rsTools
	rsTemperature
	rsTopP
	rsPrompt
	rsPromptCacheKey
	rsNumKeys
)

const statelessWhy = "the service is stateless; send the whole conversation in input"

func parseResponses(obj *topObject) (Request, *apierror.Error) {
	var f [rsNumKeys + numTopExt]string
	if d := obj.pick(responsesKeys, f[:]); d != "" {
		return Request{}, dupKey("", d)
	}
	var r Request
	var err *apierror.Error
	if r.Model, err = checkModel(f[rsModel]); err != nil {
		return r, err
	}
	if r.PromptBytes, err = r.responsesInput(f[rsInput]); err != nil {
		return r, err
	}
	if err = r.topExtensions(f[rsNumKeys:]); err != nil {
		return r, err
	}
	if err = optString("instructions", f[rsInstructions]); err != nil {
		return r, err
	}
	r.PromptBytes += textLen(f[rsInstructions])
	if err = optString("prompt_cache_key", f[rsPromptCacheKey]); err != nil {
		return r, err
	}
	r.Prefix, r.CacheKey = stringSpan(obj.s, f[rsInstructions]), stringSpan(obj.s, f[rsPromptCacheKey])
	if r.Prefix.Len == 0 {
		r.Prefix = spanIn(obj.s, firstElement(f[rsInput]))
	}
	if r.MaxTokens, err = optIntRange("max_output_tokens", f[rsMaxOutputTokens], 1, MaxCount); err != nil {
		return r, err
	}
	if r.Stream, err = optBool("stream", f[rsStream]); err != nil {
		return r, err
	}
	err = firstErr(
		onlyFalse("store", f[rsStore], storeWhy),
		onlyFalse("background", f[rsBackground], "background work is not offered"),
		onlyNull("previous_response_id", f[rsPreviousResponseID], statelessWhy),
		onlyNull("conversation", f[rsConversation], statelessWhy),
		responsesTools(f[rsTools]),
		optRange("temperature", f[rsTemperature], 0, MaxTemperature),
		optRange("top_p", f[rsTopP], 0, 1),
		onlyNull("prompt", f[rsPrompt], "stored prompt templates are not offered"),
	)
	return r, err
}

var itemKeys = []string{"type", "role", "content", "output"}

// responsesInput checks input (a string or an array of inline items) and returns the size
// of its text.
func (r *Request) responsesInput(v string) (int64, *apierror.Error) {
	switch kindOf(v) {
	case kString:
		return textLen(v), nil
	case kArray:
	case kAbsent, kNull:
		return 0, bad("input", "input is required")
	default:
		return 0, bad("input", "input must be a string or an array of input items")
	}
	var (
		size int64
		err  *apierror.Error
		n    int
	)
	var f [4]string
	eachObject(v, itemKeys, f[:], func(i int, item, d string) bool {
		n++
		if kindOf(item) != kObject {
			err = bad(at("input", i, ""), "each input item must be an object")
			return false
		}
		if d != "" {
			err = dupKey(at("input", i, "."), d)
			return false
		}
		if f[0] == `"item_reference"` {
			err = bad(at("input", i, ".type"), "item references are not supported: "+statelessWhy)
			return false
		}
		if given(f[0]) && kindOf(f[0]) != kString {
			err = bad(at("input", i, ".type"), "type must be a string")
			return false
		}
		if given(f[1]) && kindOf(f[1]) != kString {
			err = bad(at("input", i, ".role"), "role must be a string")
			return false
		}
		for k, name := range [...]string{".content", ".output"} {
			var sz int64
			sz, err = r.responsesContent(f[2+k], func() string { return at("input", i, name) })
			if err != nil {
				return false
			}
			size += sz
		}
		return true
	})
	if err == nil && n == 0 {
		err = bad("input", "input must contain at least one item")
	}
	return size, err
}

// partKeys are the keys of a Responses content part the gateway reads: type, text, file_id,
// file_url, then mediaKeys (image_url is one of them).
var partKeys = append([]string{"type", "text", "file_id", "file_url"}, mediaKeys...)

// responsesContent checks an item's content or a function_call_output's output: a string, or
// an array of parts of which only inline data is accepted (on every route: chat-style
// remote media keys are refused here too). param builds the field's name (called on error
// paths only).
func (r *Request) responsesContent(v string, param func() string) (int64, *apierror.Error) {
	switch kindOf(v) {
	case kString:
		return textLen(v), nil
	case kArray:
	default:
		return 0, nil // the upstream judges other shapes
	}
	var (
		size int64
		err  *apierror.Error
	)
	var f [4 + numMediaKeys]string
	eachObject(v, partKeys, f[:], func(j int, part, d string) bool {
		if kindOf(part) != kObject {
			err = bad(at(param(), j, ""), "each content part must be an object")
			return false
		}
		if d != "" {
			err = dupKey(at(param(), j, "."), d)
			return false
		}
		switch f[0] {
		case `"input_image"`:
			if given(f[2]) {
				err = bad(at(param(), j, ".file_id"), "file references are not supported; send the image inline as a data: URL")
			} else if given(f[4]) && !isDataURL(f[4]) {
				err = bad(at(param(), j, ".image_url"), "remote image URLs are not fetched; send the image inline as a data: URL")
			}
		case `"input_file"`:
			if given(f[2]) {
				err = bad(at(param(), j, ".file_id"), "file references are not supported; send the file inline in file_data")
			} else if given(f[3]) {
				err = bad(at(param(), j, ".file_url"), "remote file URLs are not fetched; send the file inline in file_data")
			}
		}
		if err == nil && hasMedia(f[4:]) {
			var remote string
			remote, err = r.media(f[4:], func() string { return at(param(), j, "") })
			if err == nil && remote != "" {
				err = bad(remote, remote+": remote media are not fetched; send the content inline as a data: URL or base64")
			}
		}
		size += textLen(f[1])
		return err == nil
	})
	return size, err
}

func isDataURL(v string) bool {
	return kindOf(v) == kString && len(v) >= 7 && strings.EqualFold(v[1:6], "data:")
}

var toolKeys = []string{"type", "name"}

// responsesTools checks that every tool is a function tool with a name.
func responsesTools(v string) *apierror.Error {
	if err := optArrayOfObjects("tools", v); err != nil || !given(v) {
		return err
	}
	var err *apierror.Error
	eachElement(v, func(i int, tool string) bool {
		var f [2]string
		if d := pick(tool, toolKeys, f[:]); d != "" {
			err = dupKey(at("tools", i, "."), d)
			return false
		}
		if f[0] != `"function"` {
			err = bad(at("tools", i, ".type"), "only function tools are supported (type function); hosted tools are not offered")
			return false
		}
		if kindOf(f[1]) != kString || len(f[1]) == 2 {
			err = bad(at("tools", i, ".name"), "a function tool needs a non-empty string name")
			return false
		}
		return true
	})
	return err
}
