// Package dialect describes how each model server speaks the chat completions protocol:
// where it puts a model's reasoning, how it names the stop string that ended an answer, how
// it reports an error (in a body and inside a 200 stream), and whether usage must be asked
// for. The relay (dataplane/proxy), the translators (dataplane/translate) and the edge
// (dataplane/server) read these tables instead of branching on server names.
//
// Every table reads JSON null as absent: SGLang sends "tool_calls": null,
// "reasoning_content": null and "usage": null in every chunk.
package dialect

// Server names a model server family, as a route's "server" field does.
type Server uint8

// The servers a route can name. OpenAI is the default: the plain OpenAI protocol, read
// leniently (every field any server uses is understood).
const (
	OpenAI Server = iota
	VLLM
	SGLang
	LlamaCpp
	TGI
	Ollama
	numServers
)

// Names are the route field's values, by Server.
var names = [numServers]string{"openai", "vllm", "sglang", "llamacpp", "tgi", "ollama"}

// Names returns every valid value of a route's server field.
func Names() []string { return append([]string(nil), names[:]...) }

// String is the route field's value.
func (s Server) String() string {
	if s < numServers {
		return names[s]
	}
	return "openai"
}

// Parse reads a route's server field; "" is OpenAI.
func Parse(name string) (Server, bool) {
	if name == "" {
		return OpenAI, true
	}
	for i, n := range names {
		if n == name {
			return Server(i), true
		}
	}
	return OpenAI, false
}

// Thinking is how a server is asked to think (or not).
type Thinking uint8

const (
	// ThinkNone: the server has no switch; the request is sent unchanged.
	ThinkNone Thinking = iota
	// ThinkTemplateKwargs: chat_template_kwargs.enable_thinking (vLLM, SGLang, llama.cpp:
	// Qwen3 and DeepSeek templates read it).
	ThinkTemplateKwargs
	// ThinkEffort: reasoning_effort low/medium/high (OpenAI, Ollama's OpenAI layer).
	ThinkEffort
)

// Dialect is one server's table.
type Dialect struct {
	Server Server
	// Reasoning lists the members of a chat message or delta that carry the model's
	// reasoning, in the order they are read; the first is the one the server writes.
	Reasoning []string
	// ReplayReasoning is the member of an assistant message that carries a replayed turn's
	// reasoning back to the server's chat template ("" when the server reads none: the
	// reasoning is dropped).
	ReplayReasoning string
	// StopString lists the members of a chat choice that name the matched stop string
	// (vLLM's stop_reason, SGLang's matched_stop). A number there is a stop token, not a
	// sequence.
	StopString []string
	// StopSequenceFinish is a finish_reason value that itself says a stop sequence matched
	// (TGI's "stop_sequence"); "" when the server has none.
	StopSequenceFinish string
	// FinishStop are finish_reason values of the server's that chat clients get as "stop",
	// the protocol's value for a natural end or a matched stop sequence (TGI's eos_token and
	// stop_sequence).
	FinishStop []string
	// ErrorLine: the server reports an error inside a 200 stream as an "error:" line rather
	// than a data event (llama.cpp server builds of 2025).
	ErrorLine bool
	// Thinking is how the server is asked to think.
	Thinking Thinking
	// CacheSalt: the server reads a request's cache_salt and shares prefix cache only
	// between requests with the same salt, so the node sends each account's salt on models
	// with account cache isolation. Servers without it are not sent the field.
	CacheSalt bool
}

// The tables. Sources (facts, per server):
//   - vLLM: vllm/entrypoints/openai/protocol.py (DeltaMessage.reasoning, before 0.17
//     reasoning_content; ChatCompletionResponseStreamChoice.stop_reason; ErrorResponse;
//     StreamOptions.continuous_usage_stats), vllm/entrypoints/openai/serving_chat.py (the
//     in-stream "data: {error}" then [DONE]).
//   - SGLang: python/sglang/srt/entrypoints/openai/protocol.py (DeltaMessage
//     reasoning_content and tool_calls serialised as null, matched_stop, ErrorResponse with
//     object "error"), serving_chat.py (in-stream error then [DONE]).
//   - llama.cpp: tools/server/server.cpp (reasoning_content, server_sent_event(sink,
//     "error", ...) writing an "error: {...}" line, exceed_context_size_error with n_ctx).
//   - TGI: router/src/lib.rs (ErrorEvent {error: {message, http_status_code}}, finish
//     reason stop_sequence), router/src/server.rs (streams end after the error event).
//   - Ollama: openai/openai.go (reasoning, ErrorResponse with code null, a stream ending
//     without [DONE] when generation fails).
//
// cache_salt (tenant cache isolation, docs/security.md), per server:
//   - vLLM: CompletionRequest and ChatCompletionRequest.cache_salt
//     (vllm/entrypoints/openai/protocol.py, a non-empty string or 400);
//     vllm/v1/core/kv_cache_utils.py hashes it into the first block's extra keys, so every
//     block of a prompt depends on it.
//   - SGLang: CompletionRequest and ChatCompletionRequest.cache_salt
//     (python/sglang/srt/entrypoints/openai/protocol.py); serving_base.py
//     _compute_extra_key joins cache_salt and extra_key into the request's extra_key,
//     which keys the radix cache. Older releases without the field ignore it (pydantic's
//     default drops unknown fields): no isolation there, and no error.
//   - llama.cpp server: no salt; its slots reuse the longest cached prefix whoever sent it.
//     It ignores unknown fields, so the field would be harmless but useless: not sent.
//   - TGI, Ollama: no salt. Not sent.
//   - OpenAI: refuses unknown parameters with 400. Not sent (nor to a route whose server
//     is not known yet: it gets OpenAI's table until detected).
var tables = [numServers]Dialect{
	OpenAI: {Server: OpenAI, Reasoning: []string{"reasoning_content", "reasoning"},
		StopString: []string{"stop_reason", "matched_stop"}, StopSequenceFinish: "stop_sequence",
		FinishStop: tgiFinishStop, ErrorLine: true, Thinking: ThinkEffort},
	VLLM: {Server: VLLM, Reasoning: []string{"reasoning", "reasoning_content"}, ReplayReasoning: "reasoning",
		StopString: []string{"stop_reason"}, Thinking: ThinkTemplateKwargs, CacheSalt: true},
	SGLang: {Server: SGLang, Reasoning: []string{"reasoning_content"}, ReplayReasoning: "reasoning_content",
		StopString: []string{"matched_stop"}, Thinking: ThinkTemplateKwargs, CacheSalt: true},
	LlamaCpp: {Server: LlamaCpp, Reasoning: []string{"reasoning_content"}, ReplayReasoning: "reasoning_content",
		ErrorLine: true, Thinking: ThinkTemplateKwargs},
	TGI:    {Server: TGI, StopSequenceFinish: "stop_sequence", FinishStop: tgiFinishStop},
	Ollama: {Server: Ollama, Reasoning: []string{"reasoning"}, ReplayReasoning: "reasoning", Thinking: ThinkEffort},
}

// tgiFinishStop are TGI's finish reasons (router/src/lib.rs FinishReason) that the chat
// protocol names "stop".
var tgiFinishStop = []string{"stop_sequence", "eos_token"}

// For returns server s's table (OpenAI's for an unknown value).
func For(s Server) *Dialect {
	if s >= numServers {
		s = OpenAI
	}
	return &tables[s]
}

// Of returns the table of a route's server field ("" or unknown: OpenAI).
func Of(name string) *Dialect {
	s, _ := Parse(name)
	return For(s)
}

// Default is the OpenAI table.
func Default() *Dialect { return &tables[OpenAI] }
