-- A model's cache isolation: whether accounts share the model servers' prefix cache
-- (shared) or not (account; empty is account, the default).
ALTER TABLE models ADD COLUMN cache_isolation text NOT NULL DEFAULT ''
	CONSTRAINT models_cache_isolation_known CHECK (cache_isolation IN ('', 'account', 'shared'));
