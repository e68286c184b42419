package snapshot

// Provider extension fields known to be dangerous on common model servers: they make the
// server load tensors or code, run a client-supplied template, fetch from the network, or
// tune media loaders beyond what the operator configured. Requests using one are refused
// unless the route names it in allow_extensions. The data plane detects each at the
// request's top level (not null), except image_embeds and audio_embeds, which are chat
// content parts, and chat_template, which is also refused inside chat_template_kwargs.
const (
	// ExtPromptEmbeds: vLLM deserializes client tensors with torch.load (CVE-2025-62164).
	ExtPromptEmbeds = "prompt_embeds"
	// ExtImageEmbeds, ExtAudioEmbeds: vLLM content parts carrying serialized tensors.
	ExtImageEmbeds = "image_embeds"
	ExtAudioEmbeds = "audio_embeds"
	// ExtChatTemplate: a client-supplied Jinja chat template (vLLM CVE-2025-61620).
	ExtChatTemplate = "chat_template"
	// ExtKVTransferParams: vLLM disaggregated serving; names hosts to pull KV cache from.
	ExtKVTransferParams = "kv_transfer_params"
	// ExtLogitsProcessors: vLLM loads logits processors named by qualified class name.
	ExtLogitsProcessors = "logits_processors"
	// ExtVLLMXArgs: free-form arguments to vLLM plugins and custom processors.
	ExtVLLMXArgs = "vllm_xargs"
	// ExtMMProcessorKwargs, ExtMediaIOKwargs: arguments to vLLM's multimodal processor and
	// media loaders (frame counts, sizes: resource use beyond the operator's settings).
	ExtMMProcessorKwargs = "mm_processor_kwargs"
	ExtMediaIOKwargs     = "media_io_kwargs"
	// ExtLoraPath: SGLang loads a LoRA adapter from a path or repository per request.
	ExtLoraPath = "lora_path"
	// ExtInputEmbeds: SGLang accepts input embeddings in place of a prompt.
	ExtInputEmbeds = "input_embeds"
)

// Extensions lists every extension a route may allow, in a fixed order (nodes index them
// by position, so new names are appended).
var Extensions = []string{ExtPromptEmbeds, ExtImageEmbeds, ExtAudioEmbeds, ExtChatTemplate,
	ExtKVTransferParams, ExtLogitsProcessors, ExtVLLMXArgs, ExtMMProcessorKwargs, ExtMediaIOKwargs,
	ExtLoraPath, ExtInputEmbeds}

// ExtensionIndex returns the position of name in Extensions, or -1 when it is not one.
func ExtensionIndex(name string) int {
	for i, e := range Extensions {
		if e == name {
			return i
		}
	}
	return -1
}
