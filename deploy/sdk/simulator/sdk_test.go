package simulator_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/sekgate/gateway/internal/simulator"
)

// The official SDKs parse the simulator's answers: proof that its shapes are the real ones.

func startSDKSim(t *testing.T) *simulator.Server {
	t.Helper()
	s := simulator.New(simulator.Config{Name: "sdk", Knobs: simulator.Knobs{OutputTokens: 5}})
	if err := s.Start(context.Background(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestOpenAISDK(t *testing.T) {
	s := startSDKSim(t)
	ctx := context.Background()
	client := openai.NewClient(option.WithBaseURL(s.BaseURL()), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))

	chat, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "llama-3.1-8b-instruct",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello there")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if chat.Choices[0].Message.Content != simulator.GenerateText("hello there", 5) || chat.Usage.PromptTokens != 2 || chat.Usage.CompletionTokens != 5 {
		t.Errorf("chat %+v", chat)
	}

	// Streaming with usage, accumulated.
	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:         "llama-3.1-8b-instruct",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello there")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Choices[0].Message.Content != simulator.GenerateText("hello there", 5) || acc.Usage.TotalTokens != 7 || acc.Choices[0].FinishReason != "stop" {
		t.Errorf("accumulated %+v", acc.ChatCompletion)
	}

	// Streamed tool call.
	tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "get_weather",
		Parameters: shared.FunctionParameters{
			"type":       "object",
			"properties": map[string]any{"location": map[string]any{"type": "string"}},
		},
	})}
	tstream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:    "llama-3.1-8b-instruct",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather in Kiruna?")},
		Tools:    tools,
	})
	tacc := openai.ChatCompletionAccumulator{}
	for tstream.Next() {
		tacc.AddChunk(tstream.Current())
	}
	if err := tstream.Err(); err != nil {
		t.Fatal(err)
	}
	calls := tacc.Choices[0].Message.ToolCalls
	if len(calls) != 1 || calls[0].Function.Name != "get_weather" || calls[0].Function.Arguments != `{"location": "Stockholm"}` || tacc.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("tool calls %+v finish %q", calls, tacc.Choices[0].FinishReason)
	}

	// Completions and embeddings.
	cmpl, err := client.Completions.New(ctx, openai.CompletionNewParams{
		Model:  "qwen2.5-coder-1.5b",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon")},
	})
	if err != nil || cmpl.Choices[0].Text != simulator.GenerateText("Once upon", 5) || cmpl.Usage.PromptTokens != 2 {
		t.Errorf("completion %+v %v", cmpl, err)
	}
	emb, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Model: "nomic-embed-text-v1.5",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b c"}},
	})
	if err != nil || len(emb.Data) != 2 || len(emb.Data[1].Embedding) != 768 || emb.Usage.PromptTokens != 3 {
		t.Errorf("embeddings %v", err)
	}

	// Responses, plain and streamed.
	resp, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model: "mistral-small-24b-instruct",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hej")},
	})
	if err != nil || resp.OutputText() != simulator.GenerateText("hej", 5) || resp.Usage.TotalTokens != 6 {
		t.Errorf("response %+v %v", resp, err)
	}
	rstream := client.Responses.NewStreaming(ctx, responses.ResponseNewParams{
		Model: "mistral-small-24b-instruct",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hej")},
	})
	var text string
	var final responses.Response
	for rstream.Next() {
		ev := rstream.Current()
		switch ev.Type {
		case "response.output_text.delta":
			text += ev.Delta
		case "response.completed":
			final = ev.AsResponseCompleted().Response
		}
	}
	if err := rstream.Err(); err != nil {
		t.Fatal(err)
	}
	if text != simulator.GenerateText("hej", 5) || final.Usage.OutputTokens != 5 || final.OutputText() != text {
		t.Errorf("streamed response text %q final %+v", text, final.Usage)
	}
}

func TestAnthropicSDK(t *testing.T) {
	s := startSDKSim(t)
	ctx := context.Background()
	client := anthropic.NewClient(aoption.WithBaseURL("http://"+s.Addr()), aoption.WithAPIKey("sk-test"), aoption.WithMaxRetries(0))
	params := anthropic.MessageNewParams{
		Model:     "mistral-small-24b-instruct",
		MaxTokens: 100,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello there"))},
	}
	msg, err := client.Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Content[0].Text != simulator.GenerateText("hello there", 5) || msg.StopReason != "end_turn" || msg.Usage.OutputTokens != 5 {
		t.Errorf("message %+v", msg)
	}

	params.Tools = []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
		Name:        "get_weather",
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}},
	}}}
	params.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("weather in Malmö?"))}
	stream := client.Messages.NewStreaming(ctx, params)
	acc := anthropic.Message{}
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Content) != 1 || acc.Content[0].Type != "tool_use" || acc.StopReason != "tool_use" || acc.Usage.OutputTokens != 2 {
		t.Fatalf("accumulated %+v", acc)
	}
	var input map[string]string
	if err := json.Unmarshal(acc.Content[0].Input, &input); err != nil || input["city"] != "Stockholm" {
		t.Errorf("tool input %s (%v)", acc.Content[0].Input, err)
	}
}
