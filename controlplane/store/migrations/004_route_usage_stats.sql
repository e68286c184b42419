-- A route whose upstream reports running usage in every stream chunk (vLLM's
-- stream_options.continuous_usage_stats): nodes ask for it and charge a stream cut short
-- from the last running usage rather than from an estimate.
ALTER TABLE routes ADD COLUMN continuous_usage_stats boolean NOT NULL DEFAULT false;
