package translate

import (
	"encoding/json"
	"strings"

	"github.com/sekgate/gateway/dataplane/dialect"
)

// The chat completions request the translators produce. Only fields every target server
// (vLLM, llama.cpp server, Ollama) understands are set, plus top_k, which vLLM and
// llama.cpp honour and the others ignore.
type chatRequest struct {
	Model             string          `json:"model"`
	Messages          []chatMessage   `json:"messages"`
	MaxTokens         int64           `json:"max_tokens,omitempty"`
	Temperature       json.RawMessage `json:"temperature,omitempty"`
	TopP              json.RawMessage `json:"top_p,omitempty"`
	TopK              json.RawMessage `json:"top_k,omitempty"`
	Stop              []string        `json:"stop,omitempty"`
	Stream            bool            `json:"stream,omitempty"`
	StreamOptions     *streamOptions  `json:"stream_options,omitempty"`
	Tools             []chatTool      `json:"tools,omitempty"`
	ToolChoice        any             `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty"`
	ResponseFormat    any             `json:"response_format,omitempty"`
	User              string          `json:"user,omitempty"`
	// ChatTemplateKwargs carries enable_thinking to servers whose chat templates read it
	// (vLLM, SGLang, llama.cpp); ReasoningEffort is the OpenAI-style switch.
	ChatTemplateKwargs map[string]any `json:"chat_template_kwargs,omitempty"`
	ReasoningEffort    string         `json:"reasoning_effort,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// chatMessage.Content is a string, a []any of chatTextPart/chatImagePart, or nil (null).
type chatMessage struct {
	Role       string         `json:"role"`
	Content    any            `json:"content"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	// A replayed assistant turn's reasoning, under the member the server reads
	// (setReasoning).
	ReasoningContent string `json:"reasoning_content,omitempty"`
	Reasoning        string `json:"reasoning,omitempty"`
}

// setReasoning puts a replayed turn's reasoning under the dialect's member (dropped when
// the server has none).
func (m *chatMessage) setReasoning(o *Options, text string) {
	switch o.dialect().ReplayReasoning {
	case "reasoning":
		m.Reasoning += text
	case "reasoning_content":
		m.ReasoningContent += text
	}
}

// thinkingSwitch asks the server to think or not, as its dialect understands: on and
// effort low, medium or high ("" for none given).
func (o *Options) thinkingSwitch(out *chatRequest, on bool, effort string) {
	switch o.dialect().Thinking {
	case dialect.ThinkTemplateKwargs:
		out.ChatTemplateKwargs = map[string]any{"enable_thinking": on}
	case dialect.ThinkEffort:
		if on && effort != "" {
			out.ReasoningEffort = effort
		}
	}
}

// budgetEffort maps a thinking budget in tokens onto low, medium or high.
func budgetEffort(budget int64) string {
	switch {
	case budget <= 0:
		return ""
	case budget < 4096:
		return "low"
	case budget < 16384:
		return "medium"
	}
	return "high"
}

type chatTextPart struct {
	Type string `json:"type"` // text
	Text string `json:"text"`
}

type chatImagePart struct {
	Type     string       `json:"type"` // image_url
	ImageURL chatImageURL `json:"image_url"`
}

type chatImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // function
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string      `json:"type"` // function
	Function chatFuncDef `json:"function"`
}

type chatFuncDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

type chatNamedToolChoice struct {
	Type     string `json:"type"` // function
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

func namedToolChoice(name string) chatNamedToolChoice {
	c := chatNamedToolChoice{Type: "function"}
	c.Function.Name = name
	return c
}

func textPart(s string) chatTextPart { return chatTextPart{Type: "text", Text: s} }

func imagePart(url, detail string) chatImagePart {
	return chatImagePart{Type: "image_url", ImageURL: chatImageURL{URL: url, Detail: detail}}
}

// userContent returns parts as chat content: a plain string when it is a single text part
// (the form every target server accepts), else the array of parts.
func userContent(parts []any) any {
	if len(parts) == 1 {
		if t, ok := parts[0].(chatTextPart); ok {
			return t.Text
		}
	}
	return parts
}

// joinText concatenates the text parts of parts, reporting whether all parts were text.
func joinText(parts []any, sep string) (string, bool) {
	var b strings.Builder
	for i, p := range parts {
		t, ok := p.(chatTextPart)
		if !ok {
			return "", false
		}
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(t.Text)
	}
	return b.String(), true
}

// stopReason is the translated meaning of a chat finish_reason.
type stopReason int

const (
	stopEnd      stopReason = iota // natural end (finish_reason stop or missing)
	stopSequence                   // a stop sequence matched (known only from vLLM's stop_reason)
	stopLength                     // the output limit was reached
	stopToolUse                    // the model called tools
	stopFilter                     // content_filter
)

// classifyFinish maps finish_reason. sawTools reports whether the answer carried tool
// calls: llama.cpp server and older Ollama end tool-calling answers with "stop". seq is
// vLLM's choice.stop_reason, the matched stop string (or a token ID, which is not a sequence).
func classifyFinish(finish string, seq string, sawTools bool) stopReason {
	switch finish {
	case "length":
		return stopLength
	case "tool_calls", "function_call":
		return stopToolUse
	case "content_filter":
		return stopFilter
	}
	if sawTools {
		return stopToolUse
	}
	if seq != "" {
		return stopSequence
	}
	return stopEnd
}
