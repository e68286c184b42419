package simulator

import (
	"encoding/json"
	"strings"
)

// This file and dialect_serve.go make the simulator answer chat completions as each real
// model server does, under a path prefix naming the server: /vllm/v1, /sglang/v1,
// /llamacpp/v1, /tgi/v1, /ollama/v1 and /openai/v1 (a route's base_url picks its dialect).
// Each format is written from the server's own source (cited per dialect below); facts
// carried over, no code.
//
// What an answer holds is chosen by the last user message: a word "scenario:NAME" picks
// one of the Scenario* values (plain text otherwise). A prompt over DialectContext tokens is
// refused as an overflow, and a request with tools and tool_choice "required" gets a tool
// call, as the servers do.

// Dialect names, as in the path prefix (and a route's server field).
const (
	DialectVLLM     = "vllm"
	DialectSGLang   = "sglang"
	DialectLlamaCpp = "llamacpp"
	DialectTGI      = "tgi"
	DialectOllama   = "ollama"
	DialectOpenAI   = "openai"
)

// Dialects are every dialect the simulator speaks.
var Dialects = []string{DialectOpenAI, DialectVLLM, DialectSGLang, DialectLlamaCpp, DialectTGI, DialectOllama}

// Scenarios of a dialect answer, named in the prompt as "scenario:NAME".
const (
	ScenarioPlain     = "plain"     // text only
	ScenarioReasoning = "reasoning" // reasoning in the server's field, then text
	ScenarioTool      = "tool"      // one tool call, its arguments split across chunks
	ScenarioStop      = "stop"      // a stop sequence of the request ends the answer
	ScenarioCached    = "cached"    // usage with cached prompt tokens
	ScenarioError     = "error"     // the server fails mid-way: an error inside the 200 stream (500 body when not streamed)
	ScenarioCut       = "cut"       // the stream ends without its terminal event
	ScenarioOverflow  = "overflow"  // the prompt exceeds the context window
	ScenarioSSE       = "sse"       // text framed with keep-alives, empty data frames, CRLF, split and coalesced writes
)

// Dialect answers' fixed facts, for tests.
const (
	// DialectContext is the context window the dialect simulators report and refuse beyond.
	DialectContext = 4096
	// DialectCached is the cached prompt tokens of ScenarioCached.
	DialectCached = 2
	// DialectToolName and DialectToolArgs are ScenarioTool's call; its arguments stream as
	// DialectToolFragments, one output token each.
	DialectToolName = "get_weather"
	DialectToolArgs = `{"city": "Stockholm"}`
	// DialectErrorMessage is the server's message of ScenarioError.
	DialectErrorMessage = "simulated failure during generation"
	// DialectDefaultStop is ScenarioStop's sequence when the request names none.
	DialectDefaultStop = "END"
	// DialectReasoningWords and DialectTextWords are the words of reasoning and of text
	// generated, one token (and one streamed chunk) each.
	DialectReasoningWords = 3
	DialectTextWords      = 4
)

// DialectToolFragments are DialectToolArgs as streamed.
var DialectToolFragments = []string{`{"city"`, `: "Stock`, `holm"}`}

// DialectReasoning and DialectText are what a dialect simulator generates for prompt.
func DialectReasoning(prompt string) string {
	return GenerateText("think "+prompt, DialectReasoningWords)
}
func DialectText(prompt string) string { return GenerateText(prompt, DialectTextWords) }

// scenarioOf reads "scenario:NAME" from a prompt.
func scenarioOf(prompt string) string {
	for _, f := range strings.Fields(prompt) {
		if s, ok := strings.CutPrefix(f, "scenario:"); ok {
			return s
		}
	}
	return ScenarioPlain
}

// dialectSpec is how one server writes chat completions.
type dialectSpec struct {
	// reasoning is the delta and message member of reasoning ("" when the server has
	// none).
	reasoning string
	// nulls: every chunk carries null tool_calls, reasoning_content, matched_stop and usage
	// (SGLang's pydantic models serialise unset fields).
	nulls bool
	// stopField names the matched stop string on the choice ("stop_reason", "matched_stop").
	stopField string
	// stopFinish is the finish_reason of a stop sequence ("stop", TGI "stop_sequence").
	stopFinish string
	// dataPrefix starts a data line (TGI's axum writes "data:" without the space).
	dataPrefix string
	// streamError is the in-stream error event (without its blank line), endsAfterError
	// whether [DONE] follows it.
	streamError string
	doneAfter   bool
	// cutWithEmpty: a failing stream ends after an empty chunk (Ollama).
	cutWithEmpty bool
	// errorBody is the failure body (status 500), overflowStatus and overflowBody the
	// answer to a prompt over the window (streamOverflow: TGI answers a stream with 200 and
	// an error event).
	errorBody      string
	overflowStatus int
	overflowBody   string
	streamOverflow string
	// usageAlways: the last chunk carries usage without being asked.
	usageAlways bool
	// fingerprint is the system_fingerprint (TGI and Ollama send one).
	fingerprint string
}

func jsonStr(s string) string { b, _ := json.Marshal(s); return string(b) }

var (
	vllmOverflow = "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4900 in the messages, 100 in the completion). Please reduce the length of the messages or completion."
	tgiOverflow  = "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4900 `inputs` tokens and 100 `max_new_tokens`"
)

// specs, per dialect. Sources:
//   - vLLM: vllm/entrypoints/openai/protocol.py (ChatCompletionStreamResponse, DeltaMessage
//     with reasoning (reasoning_content before 0.17), stop_reason, ErrorResponse {error:
//     ErrorInfo}) and serving_chat.py (create_streaming_error_response yields
//     "data: {error}" and the stream still ends with [DONE]).
//   - SGLang: python/sglang/srt/entrypoints/openai/protocol.py (DeltaMessage with
//     reasoning_content and tool_calls, matched_stop, usage None, ErrorResponse with object
//     "error"), serving_chat.py and serving_base.py (create_streaming_error_response, then
//     [DONE]).
//   - llama.cpp: tools/server/server.cpp and utils.hpp (reasoning_content in deltas,
//     server_sent_event(sink, "error", ...) writing "error: {json}", format_error_response
//     with exceed_context_size_error, n_prompt_tokens and n_ctx).
//   - TGI: router/src/server.rs (axum Sse writes "data:{json}", chat streams end with
//     [DONE], an error becomes ErrorEvent and the stream stops), router/src/lib.rs
//     (ErrorEvent {error: {message, http_status_code}}, FinishReason stop_sequence,
//     ErrorResponse {error, error_type}), router/src/infer/mod.rs (422 validation).
//   - Ollama: openai/openai.go (ChunkChoice delta with reasoning, ErrorResponse {error:
//     {message, type, param, code: null}}, system_fingerprint fp_ollama, usage chunk on
//     include_usage), server/routes.go (a failing generation ends the stream).
var specs = map[string]dialectSpec{
	DialectOpenAI: {stopFinish: "stop", dataPrefix: "data: ",
		streamError:  `data: {"error":{"message":` + jsonStr(DialectErrorMessage) + `,"type":"server_error","param":null,"code":null}}`,
		errorBody:    `{"error":{"message":` + jsonStr(DialectErrorMessage) + `,"type":"server_error","param":null,"code":null}}`,
		overflowBody: `{"error":{"message":` + jsonStr(vllmOverflow) + `,"type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`},
	DialectVLLM: {reasoning: "reasoning", stopField: "stop_reason", stopFinish: "stop", dataPrefix: "data: ",
		streamError:  `data: {"error":{"message":` + jsonStr(DialectErrorMessage) + `,"type":"InternalServerError","param":null,"code":500}}`,
		doneAfter:    true,
		errorBody:    `{"error":{"message":` + jsonStr(DialectErrorMessage) + `,"type":"InternalServerError","param":null,"code":500}}`,
		overflowBody: `{"error":{"message":` + jsonStr(vllmOverflow) + `,"type":"BadRequestError","param":null,"code":400}}`},
	DialectSGLang: {reasoning: "reasoning_content", nulls: true, stopField: "matched_stop", stopFinish: "stop", dataPrefix: "data: ",
		streamError:  `data: {"error":{"object":"error","message":` + jsonStr(DialectErrorMessage) + `,"type":"InternalServerError","param":null,"code":500}}`,
		doneAfter:    true,
		errorBody:    `{"object":"error","message":` + jsonStr(DialectErrorMessage) + `,"type":"InternalServerError","param":null,"code":500}`,
		overflowBody: `{"object":"error","message":"The input (4900 tokens) is longer than the model's context length (4096 tokens).","type":"BadRequestError","param":null,"code":400}`},
	DialectLlamaCpp: {reasoning: "reasoning_content", stopFinish: "stop", dataPrefix: "data: ",
		streamError:  `error: {"code":500,"message":` + jsonStr(DialectErrorMessage) + `,"type":"server_error"}`,
		errorBody:    `{"error":{"code":500,"message":` + jsonStr(DialectErrorMessage) + `,"type":"server_error"}}`,
		overflowBody: `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4900,"n_ctx":4096}}`},
	DialectTGI: {stopFinish: "stop_sequence", dataPrefix: "data:", fingerprint: "3.3.4-native",
		streamError:    `data:{"error":{"message":"Request failed during generation: Server error: ` + DialectErrorMessage + `","http_status_code":422}}`,
		errorBody:      `{"error":"Request failed during generation: Server error: ` + DialectErrorMessage + `","error_type":"generation"}`,
		overflowStatus: 422,
		overflowBody:   `{"error":` + jsonStr(tgiOverflow) + `,"error_type":"validation"}`,
		streamOverflow: `data:{"error":{"message":` + jsonStr(tgiOverflow) + `,"http_status_code":422}}`},
	DialectOllama: {reasoning: "reasoning", stopFinish: "stop", dataPrefix: "data: ", fingerprint: "fp_ollama", cutWithEmpty: true,
		streamError:  `data: {"error":{"message":` + jsonStr(DialectErrorMessage) + `,"type":"api_error","param":null,"code":null}}`,
		errorBody:    `{"error":{"message":` + jsonStr(DialectErrorMessage) + `,"type":"api_error","param":null,"code":null}}`,
		overflowBody: `{"error":{"message":"prompt too long; exceeded max context length by 804 tokens","type":"invalid_request_error","param":null,"code":null}}`},
}
