package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// MessagesToChat rewrites a Messages-style request (already validated by reqparse) as a chat
// completions request for upstreamModel.
//
//   - system (string or text blocks, joined by a newline) becomes the first system message.
//   - User text and image blocks (base64 sources become data: URLs; text document sources
//     become text) become the message content: a plain string when it is a single text
//     block, else an array of parts.
//   - Assistant text blocks are concatenated; tool_use blocks become tool_calls whose
//     arguments are the JSON text of input. Thinking blocks become the turn's reasoning
//     (MessagesToChatWith; redacted_thinking is dropped).
//   - tool_result blocks become role "tool" messages (tool_call_id = tool_use_id), placed
//     before the rest of the user message since chat requires them right after the
//     assistant's tool calls. Their text blocks are joined; images in them move to the user
//     message that follows. is_error has no chat equivalent and is dropped.
//   - tools become function tools; tool_choice auto/any/tool/none become "auto",
//     "required", a named function and "none"; disable_parallel_tool_use becomes
//     parallel_tool_calls false.
//   - max_tokens, temperature, top_p, top_k carry over; stop_sequences becomes stop;
//     metadata.user_id becomes user; stream adds stream_options.include_usage so the
//     gateway can bill. Other fields (thinking, service_tier, ...) are dropped.
func MessagesToChat(body []byte, upstreamModel string) ([]byte, error) {
	return MessagesToChatWith(body, upstreamModel, Options{})
}

// MessagesToChatWith is MessagesToChat for the server opt names: thinking {type: enabled,
// budget_tokens} (or disabled) becomes the server's thinking switch
// (chat_template_kwargs.enable_thinking, or reasoning_effort from the budget), and the
// thinking blocks of replayed assistant turns become their reasoning member.
func MessagesToChatWith(body []byte, upstreamModel string, opt Options) ([]byte, error) {
	root, ok := parseObject(body)
	if !ok {
		return nil, ErrInvalidRequest
	}
	out := chatRequest{Model: upstreamModel, Messages: []chatMessage{}}

	switch sys := root.Get("system"); {
	case sys.Type == gjson.String:
		out.Messages = append(out.Messages, chatMessage{Role: "system", Content: sys.Str})
	case sys.IsArray():
		var texts []string
		for i, b := range sys.Array() {
			if b.Get("type").Str != "text" {
				return nil, fmt.Errorf("system[%d]: %w: only text blocks", i, ErrUnsupported)
			}
			texts = append(texts, b.Get("text").Str)
		}
		out.Messages = append(out.Messages, chatMessage{Role: "system", Content: strings.Join(texts, "\n")})
	}

	switch th := root.Get("thinking"); th.Get("type").Str {
	case "enabled":
		opt.thinkingSwitch(&out, true, budgetEffort(th.Get("budget_tokens").Int()))
	case "disabled":
		opt.thinkingSwitch(&out, false, "")
	}
	for i, m := range root.Get("messages").Array() {
		msgs, err := messageToChat(m, &opt)
		if err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
		out.Messages = append(out.Messages, msgs...)
	}

	if n := root.Get("max_tokens"); n.Type == gjson.Number {
		out.MaxTokens = n.Int()
	}
	out.Temperature = rawOr(root.Get("temperature"), "")
	out.TopP = rawOr(root.Get("top_p"), "")
	out.TopK = rawOr(root.Get("top_k"), "")
	for _, s := range root.Get("stop_sequences").Array() {
		out.Stop = append(out.Stop, s.Str)
	}
	if root.Get("stream").Type == gjson.True {
		out.Stream = true
		out.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	if u := root.Get("metadata.user_id"); u.Type == gjson.String {
		out.User = u.Str
	}

	if err := messagesToolsToChat(&out, root); err != nil {
		return nil, err
	}
	return marshal(out)
}

// messagesToolsToChat carries a Messages-style request's tools and tool_choice onto a chat
// request.
func messagesToolsToChat(out *chatRequest, root gjson.Result) error {
	for i, t := range root.Get("tools").Array() {
		if typ := t.Get("type"); given(typ) && typ.Str != "custom" {
			return fmt.Errorf("tools[%d]: %w: tool type %q", i, ErrUnsupported, typ.Str)
		}
		out.Tools = append(out.Tools, chatTool{Type: "function", Function: chatFuncDef{
			Name:        t.Get("name").Str,
			Description: t.Get("description").Str,
			Parameters:  rawOr(t.Get("input_schema"), `{"type":"object"}`),
		}})
	}
	if tc := root.Get("tool_choice"); tc.IsObject() {
		switch typ := tc.Get("type").Str; typ {
		case "auto":
			out.ToolChoice = "auto"
		case "any":
			out.ToolChoice = "required"
		case "none":
			out.ToolChoice = "none"
		case "tool":
			out.ToolChoice = namedToolChoice(tc.Get("name").Str)
		default:
			return fmt.Errorf("tool_choice: %w: type %q", ErrUnsupported, typ)
		}
		if tc.Get("disable_parallel_tool_use").Type == gjson.True && len(out.Tools) > 0 {
			f := false
			out.ParallelToolCalls = &f
		}
	}
	return nil
}

// messageToChat translates one Messages-style message into one or more chat messages.
func messageToChat(m gjson.Result, opt *Options) ([]chatMessage, error) {
	role := m.Get("role").Str
	content := m.Get("content")
	if content.Type == gjson.String {
		return []chatMessage{{Role: role, Content: content.Str}}, nil
	}
	if role == "assistant" {
		return assistantToChat(content, opt)
	}
	var (
		tools []chatMessage
		parts []any
	)
	for j, b := range content.Array() {
		switch typ := b.Get("type").Str; typ {
		case "text":
			parts = append(parts, textPart(b.Get("text").Str))
		case "image", "document":
			p, err := sourceToPart(typ, b.Get("source"))
			if err != nil {
				return nil, fmt.Errorf("content[%d]: %w", j, err)
			}
			parts = append(parts, p)
		case "tool_result":
			msg, images, err := toolResultToChat(b)
			if err != nil {
				return nil, fmt.Errorf("content[%d]: %w", j, err)
			}
			tools = append(tools, msg)
			parts = append(parts, images...)
		case "thinking", "redacted_thinking":
		default:
			return nil, fmt.Errorf("content[%d]: %w: block type %q", j, ErrUnsupported, typ)
		}
	}
	if len(parts) > 0 || len(tools) == 0 {
		if parts == nil {
			parts = []any{}
		}
		tools = append(tools, chatMessage{Role: role, Content: userContent(parts)})
	}
	return tools, nil
}

func assistantToChat(content gjson.Result, opt *Options) ([]chatMessage, error) {
	var (
		text     strings.Builder
		calls    []chatToolCall
		thinking strings.Builder
	)
	for j, b := range content.Array() {
		switch typ := b.Get("type").Str; typ {
		case "text":
			text.WriteString(b.Get("text").Str)
		case "tool_use":
			args := "{}"
			if in := b.Get("input"); given(in) {
				args = in.Raw
			}
			calls = append(calls, chatToolCall{ID: b.Get("id").Str, Type: "function",
				Function: chatFunction{Name: b.Get("name").Str, Arguments: compact(args)}})
		case "thinking":
			thinking.WriteString(b.Get("thinking").Str)
		case "redacted_thinking":
		default:
			return nil, fmt.Errorf("content[%d]: %w: assistant block type %q", j, ErrUnsupported, typ)
		}
	}
	msg := chatMessage{Role: "assistant", ToolCalls: calls}
	msg.setReasoning(opt, thinking.String())
	if text.Len() > 0 || len(calls) == 0 {
		msg.Content = text.String()
	}
	return []chatMessage{msg}, nil
}

// sourceToPart turns an image or document block's inline source into a chat content part.
func sourceToPart(typ string, src gjson.Result) (any, error) {
	switch st := src.Get("type").Str; {
	case st == "base64" && typ == "image":
		return imagePart("data:"+src.Get("media_type").Str+";base64,"+src.Get("data").Str, ""), nil
	case st == "text" && typ == "document":
		return textPart(src.Get("data").Str), nil
	default:
		return nil, fmt.Errorf("%w: %s source type %q", ErrUnsupported, typ, st)
	}
}

// toolResultToChat returns the tool message of a tool_result block and the images it held.
func toolResultToChat(b gjson.Result) (chatMessage, []any, error) {
	msg := chatMessage{Role: "tool", ToolCallID: b.Get("tool_use_id").Str}
	c := b.Get("content")
	if c.Type == gjson.String || !given(c) {
		msg.Content = c.Str
		return msg, nil, nil
	}
	var (
		texts  []string
		images []any
	)
	for k, x := range c.Array() {
		switch typ := x.Get("type").Str; typ {
		case "text":
			texts = append(texts, x.Get("text").Str)
		case "image", "document":
			p, err := sourceToPart(typ, x.Get("source"))
			if err != nil {
				return msg, nil, fmt.Errorf("content[%d]: %w", k, err)
			}
			if t, ok := p.(chatTextPart); ok {
				texts = append(texts, t.Text)
			} else {
				images = append(images, p)
			}
		default:
			return msg, nil, fmt.Errorf("content[%d]: %w: tool_result block type %q", k, ErrUnsupported, typ)
		}
	}
	msg.Content = strings.Join(texts, "\n")
	return msg, images, nil
}

func compact(raw string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(raw)); err != nil {
		return raw
	}
	return b.String()
}

// The Messages-style answer.
type anthropicMessage struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"` // message
	Role         string         `json:"role"` // assistant
	Model        string         `json:"model"`
	Content      []any          `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        anthropicUsage `json:"usage"`
}

type anthropicUsage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// CacheReadInputTokens are the prompt tokens the server read from its cache
	// (prompt_tokens_details.cached_tokens): Messages-style usage counts them beside
	// input_tokens, not in it.
	CacheReadInputTokens int64 `json:"cache_read_input_tokens,omitempty"`
}

// messagesUsage renders billed chat usage with cached prompt tokens the Messages way.
func messagesUsage(u Usage, cached int64) anthropicUsage {
	if cached <= 0 || cached > u.InputTokens {
		cached = 0
	}
	return anthropicUsage{InputTokens: u.InputTokens - cached, OutputTokens: u.OutputTokens, CacheReadInputTokens: cached}
}

type anthropicText struct {
	Type string `json:"type"` // text
	Text string `json:"text"`
}

type anthropicThinking struct {
	Type      string `json:"type"` // thinking
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type anthropicToolUse struct {
	Type  string          `json:"type"` // tool_use
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// messagesStop maps a stop classification to stop_reason. content_filter becomes
// "refusal", the Messages-style reason for output stopped by a safety filter.
func messagesStop(r stopReason) string {
	switch r {
	case stopSequence:
		return "stop_sequence"
	case stopLength:
		return "max_tokens"
	case stopToolUse:
		return "tool_use"
	case stopFilter:
		return "refusal"
	}
	return "end_turn"
}

// ChatToMessagesResponse turns a non-streamed chat completion into a Messages-style message
// for model (the name the client asked for). Only the first choice is used. Text becomes a
// text block, tool_calls become tool_use blocks whose input is the parsed arguments (empty
// arguments are {}; arguments that are not a JSON object are an ErrUpstream error, not
// silently dropped). finish_reason stop → end_turn (stop_sequence when vLLM's stop_reason
// names the matched string), length → max_tokens, tool_calls → tool_use (also when a server
// ends a tool-calling answer with stop), content_filter → refusal. The ID is "msg_" plus
// the upstream ID's suffix. The returned Usage is what to bill.
func ChatToMessagesResponse(chatResp []byte, model string) ([]byte, Usage, error) {
	return ChatToMessagesResponseWith(chatResp, model, Options{})
}

// ChatToMessagesResponseWith is ChatToMessagesResponse for the server opt names: its
// reasoning member becomes a thinking block before the text, and its stop-string member
// or stop-sequence finish a stop_sequence.
func ChatToMessagesResponseWith(chatResp []byte, model string, opt Options) ([]byte, Usage, error) {
	root, ok := parseObject(chatResp)
	if !ok {
		return nil, Usage{}, fmt.Errorf("%w: chat completion is not a JSON object", ErrUpstream)
	}
	choice := root.Get("choices.0")
	if !choice.IsObject() {
		return nil, Usage{}, fmt.Errorf("%w: chat completion has no choices", ErrUpstream)
	}
	usage, _ := usageFromChat(root.Get("usage"))
	msg := choice.Get("message")
	out := anthropicMessage{ID: "msg_" + idSuffix(root.Get("id").Str), Type: "message", Role: "assistant",
		Model: model, Content: []any{}, Usage: messagesUsage(usage, detailCount(root.Get("usage.prompt_tokens_details.cached_tokens")))}
	if r := opt.reasoningOf(msg); r != "" {
		out.Content = append(out.Content, anthropicThinking{Type: "thinking", Thinking: r, Signature: signText(r)})
	}
	if text := messageText(msg.Get("content")); text != "" {
		out.Content = append(out.Content, anthropicText{Type: "text", Text: text})
	}
	calls := msg.Get("tool_calls").Array() // null: none
	for i, tc := range calls {
		input, err := toolInput(tc.Get("function.arguments").Str)
		if err != nil {
			return nil, Usage{}, fmt.Errorf("tool call %d: %w", i, err)
		}
		id := tc.Get("id").Str
		if id == "" {
			id = fmt.Sprintf("toolu_%s_%d", idSuffix(root.Get("id").Str), i)
		}
		out.Content = append(out.Content, anthropicToolUse{Type: "tool_use", ID: id,
			Name: tc.Get("function.name").Str, Input: input})
	}
	kind, seq := opt.stopKind(choice.Get("finish_reason").Str, opt.stopString(choice), len(calls) > 0)
	reason := messagesStop(kind)
	out.StopReason = &reason
	if kind == stopSequence && seq != "" {
		out.StopSequence = &seq
	}
	b, err := marshal(out)
	return b, usage, err
}

// messageText returns a chat message's content: a string, or the text parts of an array.
func messageText(c gjson.Result) string {
	if c.Type == gjson.String {
		return c.Str
	}
	var b strings.Builder
	for _, p := range c.Array() {
		b.WriteString(p.Get("text").Str)
	}
	return b.String()
}

// toolInput parses tool-call arguments into a JSON object.
func toolInput(args string) (json.RawMessage, error) {
	if strings.TrimSpace(args) == "" {
		return json.RawMessage("{}"), nil
	}
	r, ok := parseObject([]byte(args))
	if !ok {
		return nil, fmt.Errorf("%w: tool call arguments are not a JSON object", ErrUpstream)
	}
	return json.RawMessage(r.Raw), nil
}
