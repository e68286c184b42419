package reqparse

import (
	"github.com/sekgate/gateway/shared/apierror"
)

var messagesKeys = withExt([]string{"model", "messages", "max_tokens", "system", "stream", "tools",
	"temperature", "top_p", "stop_sequences", "mcp_servers"})

const (
	msModel = iota
	msMessages
	msMaxTokens
	msSystem
	msStream
	msTools
	msTemperature
	msTopP
	msStopSequences
	msMCPServers
	msNumKeys
)

// parseMessages validates a Messages-style body; countTokens selects the rules of
// /v1/messages/count_tokens (no max_tokens, stream only false).
func parseMessages(obj *topObject, countTokens bool) (Request, *apierror.Error) {
	var f [msNumKeys + numTopExt]string
	if d := obj.pick(messagesKeys, f[:]); d != "" {
		return Request{}, dupKey("", d)
	}
	var r Request
	var err *apierror.Error
	if r.Model, err = checkModel(f[msModel]); err != nil {
		return r, err
	}
	if err = r.topExtensions(f[msNumKeys:]); err != nil {
		return r, err
	}
	if r.PromptBytes, err = anthropicMessages(f[msMessages]); err != nil {
		return r, err
	}
	if !countTokens {
		if !given(f[msMaxTokens]) {
			return r, bad("max_tokens", "max_tokens is required")
		}
		if r.MaxTokens, err = optIntRange("max_tokens", f[msMaxTokens], 1, MaxCount); err != nil {
			return r, err
		}
	}
	sys, err := anthropicSystem(f[msSystem])
	if err != nil {
		return r, err
	}
	r.PromptBytes += sys
	if kindOf(f[msSystem]) == kString || kindOf(f[msSystem]) == kArray {
		r.Prefix = spanIn(obj.s, f[msSystem])
	}
	if r.Prefix.Len == 0 {
		r.Prefix = spanIn(obj.s, firstElement(f[msMessages]))
	}
	if countTokens {
		err = onlyFalse("stream", f[msStream], "token counting does not stream")
	} else {
		r.Stream, err = optBool("stream", f[msStream])
	}
	if err != nil {
		return r, err
	}
	err = firstErr(
		anthropicTools(f[msTools]),
		optRange("temperature", f[msTemperature], 0, MaxTemperatureMessages),
		optRange("top_p", f[msTopP], 0, 1),
		optStringArray("stop_sequences", f[msStopSequences]),
	)
	if err == nil && given(f[msMCPServers]) && f[msMCPServers] != "[]" {
		err = bad("mcp_servers", "MCP connectors are not offered: tools are executed by the client")
	}
	return r, err
}

func optStringArray(param, v string) *apierror.Error {
	if !given(v) {
		return nil
	}
	ok := kindOf(v) == kArray
	if ok {
		eachElement(v, func(_ int, e string) bool {
			ok = kindOf(e) == kString
			return ok
		})
	}
	if !ok {
		return bad(param, param+" must be an array of strings")
	}
	return nil
}

var roleContentKeys = []string{"role", "content"}

// anthropicMessages checks the messages array and returns the size of its text.
func anthropicMessages(v string) (int64, *apierror.Error) {
	var f [2]string
	return eachMessage(v, roleContentKeys, f[:], func(i int) (int64, *apierror.Error) {
		return anthropicContent(f[1], contentParam{msg: i, block: -1})
	})
}

var blockKeys = []string{"type", "text", "source", "content"}

var typeKeys = []string{"type"}

// contentParam names the content anthropicContent checks: message msg's, or (block >= 0)
// that of its content block number block (a tool_result's). A value, not a closure: the
// recursion would move a closure to the heap once per message.
type contentParam struct{ msg, block int }

func (p contentParam) param() string {
	s := at("messages", p.msg, ".content")
	if p.block >= 0 {
		s = at(s, p.block, ".content")
	}
	return s
}

// anthropicContent checks message content (a string or an array of blocks; null and absent
// pass) and returns the size of its text. Image and document blocks must carry their data
// inline; a message's tool_result content is checked likewise, one level deep.
func anthropicContent(v string, p contentParam) (int64, *apierror.Error) {
	param := p.param
	switch kindOf(v) {
	case kAbsent, kNull:
		return 0, nil
	case kString:
		return textLen(v), nil
	case kArray:
	default:
		return 0, bad(param(), "content must be a string or an array of content blocks")
	}
	var (
		size int64
		err  *apierror.Error
	)
	var f [4]string
	eachObject(v, blockKeys, f[:], func(j int, block, d string) bool {
		if kindOf(block) != kObject {
			err = bad(at(param(), j, ""), "each content block must be an object")
			return false
		}
		if d != "" {
			err = dupKey(at(param(), j, "."), d)
			return false
		}
		switch f[0] {
		case `"image"`, `"document"`:
			if kindOf(f[2]) == kObject {
				var t [1]string
				if d := pick(f[2], typeKeys, t[:]); d != "" {
					err = dupKey(at(param(), j, ".source."), d)
					return false
				}
				if t[0] == `"url"` || t[0] == `"file"` {
					err = bad(at(param(), j, ".source.type"), "URL and file sources are not fetched; send the data inline (base64 or text source)")
					return false
				}
				if f[0] == `"document"` {
					var d [1]string
					pick(f[2], dataKeys, d[:])
					if t[0] == `"text"` {
						size += textLen(d[0])
					}
				}
			}
		case `"tool_result"`:
			if p.block < 0 {
				var sz int64
				sz, err = anthropicContent(f[3], contentParam{msg: p.msg, block: j})
				size += sz
			}
		}
		size += textLen(f[1])
		return err == nil
	})
	return size, err
}

var dataKeys = []string{"data"}

// anthropicSystem checks system (a string or an array of text blocks) and returns its size.
func anthropicSystem(v string) (int64, *apierror.Error) {
	switch kindOf(v) {
	case kAbsent, kNull:
		return 0, nil
	case kString:
		return textLen(v), nil
	case kArray:
	default:
		return 0, bad("system", "system must be a string or an array of text blocks")
	}
	var (
		size int64
		err  *apierror.Error
	)
	eachElement(v, func(j int, block string) bool {
		var f [2]string
		if kindOf(block) == kObject {
			if d := pick(block, blockKeys[:2], f[:]); d != "" {
				err = dupKey(at("system", j, "."), d)
				return false
			}
		}
		if f[0] != `"text"` || kindOf(f[1]) != kString {
			err = bad(at("system", j, ""), "each system block must be a text block with a string text")
			return false
		}
		size += textLen(f[1])
		return true
	})
	return size, err
}

var anthropicToolKeys = []string{"type", "name", "input_schema"}

// anthropicTools checks client tools: type custom or absent, a name and an input_schema.
func anthropicTools(v string) *apierror.Error {
	if err := optArrayOfObjects("tools", v); err != nil || !given(v) {
		return err
	}
	var err *apierror.Error
	eachElement(v, func(i int, tool string) bool {
		var f [3]string
		if d := pick(tool, anthropicToolKeys, f[:]); d != "" {
			err = dupKey(at("tools", i, "."), d)
			return false
		}
		if given(f[0]) && f[0] != `"custom"` {
			err = bad(at("tools", i, ".type"), "only client tools are supported (type custom or absent); hosted tools are not offered")
			return false
		}
		if kindOf(f[1]) != kString || len(f[1]) == 2 {
			err = bad(at("tools", i, ".name"), "a tool needs a non-empty string name")
			return false
		}
		if kindOf(f[2]) != kObject {
			err = bad(at("tools", i, ".input_schema"), "a tool needs an input_schema object")
			return false
		}
		return true
	})
	return err
}

var systemOneKeys = withExt([]string{"model", "state", "questions"})

var questionKeys = []string{"type", "choices"}

func parseSystemOne(obj *topObject) (Request, *apierror.Error) {
	var f [3 + numTopExt]string
	if d := obj.pick(systemOneKeys, f[:]); d != "" {
		return Request{}, dupKey("", d)
	}
	var r Request
	var err *apierror.Error
	if r.Model, err = checkModel(f[0]); err != nil {
		return r, err
	}
	if err = r.topExtensions(f[3:]); err != nil {
		return r, err
	}
	if kindOf(f[1]) != kString {
		return r, bad("state", "state is required and must be a string")
	}
	r.PromptBytes = textLen(f[1])
	switch kindOf(f[2]) {
	case kObject:
	case kAbsent, kNull:
		return r, bad("questions", "questions is required")
	default:
		return r, bad("questions", "questions must be an object of named questions")
	}
	seen := false
	eachMember(f[2], func(name, q string) bool {
		seen = true
		r.InputCount++
		if kindOf(q) != kObject {
			err = bad("questions."+name, "question "+name+" must be an object")
			return false
		}
		var qf [2]string
		if d := pick(q, questionKeys, qf[:]); d != "" {
			err = dupKey("questions."+name+".", d)
			return false
		}
		switch qf[0] {
		case `"noul"`, `"score"`:
		case `"choice"`:
			ok := kindOf(qf[1]) == kArray && qf[1] != "[]"
			if ok {
				n := 0
				eachElement(qf[1], func(_ int, c string) bool {
					n++
					ok = kindOf(c) == kString
					return ok
				})
				ok = ok && n > 0
			}
			if !ok {
				err = bad("questions."+name, "choice question "+name+" needs choices, a non-empty array of strings")
				return false
			}
		default:
			err = bad("questions."+name, "question "+name+" needs a type of choice, noul or score")
			return false
		}
		return true
	})
	if err == nil && !seen {
		err = bad("questions", "questions must contain at least one question")
	}
	return r, err
}
