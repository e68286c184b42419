-- A model's divisor of the node's delivered-output estimate (docs/limits.md): 2 to 32
-- bytes per token, 0 for the default.
ALTER TABLE models ADD COLUMN output_bytes_per_token integer NOT NULL DEFAULT 0
	CONSTRAINT models_output_bytes_per_token_range CHECK (output_bytes_per_token = 0 OR output_bytes_per_token BETWEEN 2 AND 32);
