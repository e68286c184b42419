-- The model server a route speaks to (vllm, sglang, llamacpp, tgi, ollama, openai; empty:
-- openai, or detected by the nodes), which decides its dialect (docs/providers.md).
ALTER TABLE routes ADD COLUMN server text NOT NULL DEFAULT '';
