package translate

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// ResponsesToChat rewrites a Responses-style request (already validated by reqparse) as a
// chat completions request for upstreamModel.
//
//   - instructions becomes the first system message; input as a string becomes one user
//     message.
//   - Message items (type "message", or no type with a role) keep their role, except
//     "developer", which becomes "system". Content is a string or parts: input_text,
//     output_text and refusal become text; input_image (a data: URL) becomes an image_url
//     part with its detail. Assistant text is concatenated into a string. input_file has no
//     chat equivalent on the target servers and is ErrUnsupported.
//   - function_call items become tool_calls of an assistant message (consecutive calls, and
//     a call right after an assistant message, share that message); function_call_output
//     items become role "tool" messages (output string, or its text parts joined).
//   - reasoning items become the reasoning of the assistant turn they begin
//     (ResponsesToChatWith; dropped for a server without a reasoning member); any other
//     item type is ErrUnsupported.
//   - max_output_tokens becomes max_tokens; temperature, top_p, parallel_tool_calls and
//     user carry over; function tools become chat function tools; tool_choice
//     auto/none/required and {type: function, name} carry over; text.format json_schema and
//     json_object become response_format; stream adds stream_options.include_usage.
//     Other fields (metadata, reasoning, truncation, ...) are dropped.
func ResponsesToChat(body []byte, upstreamModel string) ([]byte, error) {
	return ResponsesToChatWith(body, upstreamModel, Options{})
}

// ResponsesToChatWith is ResponsesToChat for the server opt names: reasoning.effort
// becomes the server's thinking switch ("none" turns thinking off), and replayed
// reasoning items become the next assistant turn's reasoning member.
func ResponsesToChatWith(body []byte, upstreamModel string, opt Options) ([]byte, error) {
	root, ok := parseObject(body)
	if !ok {
		return nil, ErrInvalidRequest
	}
	out := chatRequest{Model: upstreamModel, Messages: []chatMessage{}}
	if ins := root.Get("instructions"); ins.Type == gjson.String {
		out.Messages = append(out.Messages, chatMessage{Role: "system", Content: ins.Str})
	}
	switch in := root.Get("input"); {
	case in.Type == gjson.String:
		out.Messages = append(out.Messages, chatMessage{Role: "user", Content: in.Str})
	case in.IsArray():
		var err error
		in.ForEach(func(k, item gjson.Result) bool {
			out.Messages, err = itemToChat(out.Messages, item, &opt)
			if err != nil {
				err = fmt.Errorf("input[%d]: %w", k.Int(), err)
			}
			return err == nil
		})
		if err != nil {
			return nil, err
		}
	}
	if e := root.Get("reasoning.effort"); e.Type == gjson.String {
		opt.thinkingSwitch(&out, e.Str != "none", e.Str)
	}
	if n := root.Get("max_output_tokens"); n.Type == gjson.Number {
		out.MaxTokens = n.Int()
	}
	out.Temperature = rawOr(root.Get("temperature"), "")
	out.TopP = rawOr(root.Get("top_p"), "")
	if p := root.Get("parallel_tool_calls"); p.IsBool() {
		b := p.Bool()
		out.ParallelToolCalls = &b
	}
	if u := root.Get("user"); u.Type == gjson.String {
		out.User = u.Str
	}
	if root.Get("stream").Type == gjson.True {
		out.Stream = true
		out.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	if err := responsesToolsToChat(&out, root); err != nil {
		return nil, err
	}
	if err := responsesFormatToChat(&out, root.Get("text.format")); err != nil {
		return nil, err
	}
	return marshal(out)
}

// responsesToolsToChat carries a Responses-style request's function tools and tool_choice
// onto a chat request.
func responsesToolsToChat(out *chatRequest, root gjson.Result) error {
	for i, t := range root.Get("tools").Array() {
		if typ := t.Get("type").Str; typ != "function" {
			return fmt.Errorf("tools[%d]: %w: tool type %q", i, ErrUnsupported, typ)
		}
		def := chatFuncDef{Name: t.Get("name").Str, Description: t.Get("description").Str,
			Parameters: rawOr(t.Get("parameters"), `{"type":"object"}`)}
		if s := t.Get("strict"); s.IsBool() {
			b := s.Bool()
			def.Strict = &b
		}
		out.Tools = append(out.Tools, chatTool{Type: "function", Function: def})
	}
	switch tc := root.Get("tool_choice"); {
	case tc.Type == gjson.String:
		switch tc.Str {
		case "auto", "none", "required":
			out.ToolChoice = tc.Str
		default:
			return fmt.Errorf("tool_choice: %w: %q", ErrUnsupported, tc.Str)
		}
	case tc.IsObject():
		if typ := tc.Get("type").Str; typ != "function" {
			return fmt.Errorf("tool_choice: %w: type %q", ErrUnsupported, typ)
		}
		out.ToolChoice = namedToolChoice(tc.Get("name").Str)
	}
	return nil
}

// responsesFormatToChat carries a Responses-style text.format onto a chat request's
// response_format.
func responsesFormatToChat(out *chatRequest, f gjson.Result) error {
	if f.IsObject() {
		switch typ := f.Get("type").Str; typ {
		case "json_schema":
			js := map[string]json.RawMessage{"name": json.RawMessage(f.Get("name").Raw)}
			if !f.Get("name").Exists() {
				js["name"] = json.RawMessage(`"response"`)
			}
			for _, k := range []string{"schema", "strict", "description"} {
				if v := f.Get(k); given(v) {
					js[k] = json.RawMessage(v.Raw)
				}
			}
			out.ResponseFormat = map[string]any{"type": "json_schema", "json_schema": js}
		case "json_object":
			out.ResponseFormat = map[string]string{"type": "json_object"}
		case "text", "":
		default:
			return fmt.Errorf("text.format: %w: type %q", ErrUnsupported, typ)
		}
	}
	return nil
}

// itemToChat appends the chat form of one Responses input item to msgs.
func itemToChat(msgs []chatMessage, item gjson.Result, opt *Options) ([]chatMessage, error) {
	typ := item.Get("type").Str
	if typ == "" && item.Get("role").Exists() {
		typ = "message"
	}
	switch typ {
	case "message":
		return messageItemToChat(msgs, item)
	case "function_call":
		call := chatToolCall{ID: item.Get("call_id").Str, Type: "function", Function: chatFunction{
			Name: item.Get("name").Str, Arguments: item.Get("arguments").Str}}
		if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" {
			msgs[n-1].ToolCalls = append(msgs[n-1].ToolCalls, call)
			if s, ok := msgs[n-1].Content.(string); ok && s == "" {
				msgs[n-1].Content = nil
			}
			return msgs, nil
		}
		return append(msgs, chatMessage{Role: "assistant", ToolCalls: []chatToolCall{call}}), nil
	case "function_call_output":
		msg := chatMessage{Role: "tool", ToolCallID: item.Get("call_id").Str}
		o := item.Get("output")
		if o.Type == gjson.String {
			msg.Content = o.Str
			return append(msgs, msg), nil
		}
		parts, err := responsesParts(o)
		if err != nil {
			return nil, err
		}
		text, ok := joinText(parts, "\n")
		if !ok {
			return nil, fmt.Errorf("%w: images in function_call_output", ErrUnsupported)
		}
		msg.Content = text
		return append(msgs, msg), nil
	case "reasoning":
		var text strings.Builder
		for _, part := range []string{"content", "summary"} {
			item.Get(part).ForEach(func(_, p gjson.Result) bool {
				text.WriteString(p.Get("text").Str)
				return true
			})
			if text.Len() > 0 {
				break
			}
		}
		msg := chatMessage{Role: "assistant"}
		if msg.setReasoning(opt, text.String()); msg.Reasoning == "" && msg.ReasoningContent == "" {
			return msgs, nil
		}
		return append(msgs, msg), nil
	}
	return nil, fmt.Errorf("%w: input item type %q", ErrUnsupported, typ)
}

// messageItemToChat appends a Responses-style message item to msgs.
func messageItemToChat(msgs []chatMessage, item gjson.Result) ([]chatMessage, error) {
	role := item.Get("role").Str
	if role == "developer" {
		role = "system"
	}
	c := item.Get("content")
	if c.Type == gjson.String {
		return append(msgs, chatMessage{Role: role, Content: c.Str}), nil
	}
	parts, err := responsesParts(c)
	if err != nil {
		return nil, err
	}
	if role == "assistant" || role == "system" {
		text, ok := joinText(parts, "")
		if !ok {
			return nil, fmt.Errorf("%w: images in %s messages", ErrUnsupported, role)
		}
		if n := len(msgs); role == "assistant" && n > 0 && reasoningOnly(msgs[n-1]) {
			msgs[n-1].Content = text // the turn a replayed reasoning item began
			return msgs, nil
		}
		return append(msgs, chatMessage{Role: role, Content: text}), nil
	}
	if parts == nil {
		parts = []any{}
	}
	return append(msgs, chatMessage{Role: role, Content: userContent(parts)}), nil
}

// responsesParts translates an array of Responses content parts.
func responsesParts(c gjson.Result) ([]any, error) {
	var parts []any
	var err error
	c.ForEach(func(k, p gjson.Result) bool {
		switch typ := p.Get("type").Str; typ {
		case "input_text", "output_text", "text":
			parts = append(parts, textPart(p.Get("text").Str))
		case "refusal":
			parts = append(parts, textPart(p.Get("refusal").Str))
		case "input_image":
			u := p.Get("image_url").Str
			if !strings.HasPrefix(strings.ToLower(u), "data:") {
				err = fmt.Errorf("content[%d]: %w: images must be inline data: URLs", k.Int(), ErrUnsupported)
				return false
			}
			detail := p.Get("detail").Str
			if detail == "auto" {
				detail = ""
			}
			parts = append(parts, imagePart(u, detail))
		default:
			err = fmt.Errorf("content[%d]: %w: content part type %q", k.Int(), ErrUnsupported, typ)
		}
		return err == nil
	})
	return parts, err
}

// The Responses-style answer and its output items.
type responseObject struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"` // response
	CreatedAt         int64              `json:"created_at"`
	Status            string             `json:"status"`
	Error             any                `json:"error"`
	IncompleteDetails *incompleteDetails `json:"incomplete_details"`
	Model             string             `json:"model"`
	Output            []any              `json:"output"`
	Usage             *responseUsage     `json:"usage"`
}

type incompleteDetails struct {
	Reason string `json:"reason"`
}

type responseUsage struct {
	InputTokens         int64              `json:"input_tokens"`
	InputTokensDetails  cachedTokens       `json:"input_tokens_details"`
	OutputTokens        int64              `json:"output_tokens"`
	OutputTokensDetails reasoningTokensObj `json:"output_tokens_details"`
	TotalTokens         int64              `json:"total_tokens"`
}

type cachedTokens struct {
	CachedTokens int64 `json:"cached_tokens"`
}

type reasoningTokensObj struct {
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

type messageItem struct {
	ID      string       `json:"id"`
	Type    string       `json:"type"` // message
	Status  string       `json:"status"`
	Role    string       `json:"role"` // assistant
	Content []outputText `json:"content"`
}

type outputText struct {
	Type        string `json:"type"` // output_text
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
}

// reasoningItem is a reasoning output item in the form open-weight reasoning takes in the
// Responses protocol: the reasoning text as reasoning_text content, no summary.
type reasoningItem struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"` // reasoning
	Summary []any           `json:"summary"`
	Content []reasoningText `json:"content"`
	Status  string          `json:"status,omitempty"`
}

type reasoningText struct {
	Type string `json:"type"` // reasoning_text
	Text string `json:"text"`
}

type functionCallItem struct {
	ID        string `json:"id"`
	Type      string `json:"type"` // function_call
	Status    string `json:"status"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func newOutputText(s string) outputText {
	return outputText{Type: "output_text", Text: s, Annotations: []any{}}
}

// responseUsageOf renders billed usage with the upstream's cached and reasoning details.
func responseUsageOf(u Usage, upstream gjson.Result) *responseUsage {
	return &responseUsage{
		InputTokens:         u.InputTokens,
		InputTokensDetails:  cachedTokens{detailCount(upstream.Get("prompt_tokens_details.cached_tokens"))},
		OutputTokens:        u.OutputTokens,
		OutputTokensDetails: reasoningTokensObj{detailCount(upstream.Get("completion_tokens_details.reasoning_tokens"))},
		TotalTokens:         u.Total(),
	}
}

// responseStatus maps a stop classification to the response status and, for incomplete
// answers, the reason: length → max_output_tokens, content_filter → content_filter.
func responseStatus(r stopReason) (string, *incompleteDetails) {
	switch r {
	case stopLength:
		return "incomplete", &incompleteDetails{Reason: "max_output_tokens"}
	case stopFilter:
		return "incomplete", &incompleteDetails{Reason: "content_filter"}
	}
	return "completed", nil
}

// created returns the upstream's creation time, or now when it sent none.
func created(r gjson.Result) int64 {
	if c := r.Get("created"); c.Type == gjson.Number && c.Int() > 0 {
		return c.Int()
	}
	return time.Now().Unix()
}

// ChatToResponsesResponse turns a non-streamed chat completion into a Responses-style
// response for model. Only the first choice is used: its text becomes one message item,
// each tool call a function_call item (arguments passed through as the upstream's string;
// empty arguments become "{}").
// finish_reason length makes the status "incomplete" with incomplete_details.reason
// max_output_tokens (content_filter likewise with reason content_filter); otherwise the
// status is "completed". IDs are derived from the upstream ID ("resp_", "msg_", "fc_").
func ChatToResponsesResponse(chatResp []byte, model string) ([]byte, Usage, error) {
	return ChatToResponsesResponseWith(chatResp, model, Options{})
}

// ChatToResponsesResponseWith is ChatToResponsesResponse for the server opt names: its
// reasoning member becomes a reasoning item before the message, and reasoning_tokens
// come from the server's usage details.
func ChatToResponsesResponseWith(chatResp []byte, model string, opt Options) ([]byte, Usage, error) {
	root, ok := parseObject(chatResp)
	if !ok {
		return nil, Usage{}, fmt.Errorf("%w: chat completion is not a JSON object", ErrUpstream)
	}
	choice := root.Get("choices.0")
	if !choice.IsObject() {
		return nil, Usage{}, fmt.Errorf("%w: chat completion has no choices", ErrUpstream)
	}
	usage, _ := usageFromChat(root.Get("usage"))
	suffix := idSuffix(root.Get("id").Str)
	msg := choice.Get("message")
	calls := msg.Get("tool_calls").Array()
	kind, _ := opt.stopKind(choice.Get("finish_reason").Str, opt.stopString(choice), len(calls) > 0)
	status, details := responseStatus(kind)
	out := responseObject{ID: "resp_" + suffix, Object: "response", CreatedAt: created(root), Status: status,
		IncompleteDetails: details, Model: model, Output: []any{}, Usage: responseUsageOf(usage, root.Get("usage"))}
	if r := opt.reasoningOf(msg); r != "" {
		out.Output = append(out.Output, reasoningItem{ID: fmt.Sprintf("rs_%s_%d", suffix, len(out.Output)), Type: "reasoning",
			Summary: []any{}, Content: []reasoningText{{Type: "reasoning_text", Text: r}}})
	}
	if text := messageText(msg.Get("content")); text != "" {
		out.Output = append(out.Output, messageItem{ID: fmt.Sprintf("msg_%s_%d", suffix, len(out.Output)),
			Type: "message", Status: status, Role: "assistant", Content: []outputText{newOutputText(text)}})
	}
	for _, tc := range calls {
		n := len(out.Output)
		callID := tc.Get("id").Str
		if callID == "" {
			callID = fmt.Sprintf("call_%s_%d", suffix, n)
		}
		args := tc.Get("function.arguments").Str
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		out.Output = append(out.Output, functionCallItem{ID: fmt.Sprintf("fc_%s_%d", suffix, n), Type: "function_call",
			Status: "completed", CallID: callID, Name: tc.Get("function.name").Str, Arguments: args})
	}
	b, err := marshal(out)
	return b, usage, err
}

// reasoningOnly reports whether m is an assistant turn begun by a replayed reasoning item
// (reasoning, no content or calls yet).
func reasoningOnly(m chatMessage) bool {
	return m.Role == "assistant" && m.Content == nil && len(m.ToolCalls) == 0 && (m.Reasoning != "" || m.ReasoningContent != "")
}
