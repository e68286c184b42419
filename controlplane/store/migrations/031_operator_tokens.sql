-- Operator API tokens: each belongs to an operator, carries a role no higher than the
-- operator's (checked by the control plane when made, and again on every use against the
-- operator's role then), a name unique among the operator's live tokens and an optional
-- expiry. The secret is shown once; only its SHA-256 is stored. A revoked token is kept
-- (the audit log names it) and never works again.
CREATE TABLE operator_tokens (
	id           text PRIMARY KEY CHECK (id ~ '^otk_[0-9a-f]{16}$'),
	operator     text NOT NULL REFERENCES operators (name) ON DELETE CASCADE,
	name         text NOT NULL CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._ -]{0,63}$'),
	role         text NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
	token_hash   text NOT NULL UNIQUE CHECK (token_hash ~ '^[0-9a-f]{64}$'),
	created_by   text NOT NULL,
	created_at   timestamptz NOT NULL,
	expires_at   timestamptz,
	revoked_at   timestamptz,
	revoked_by   text,
	last_used_at timestamptz,
	CHECK (expires_at IS NULL OR expires_at > created_at),
	CHECK ((revoked_at IS NULL) = (revoked_by IS NULL))
);
CREATE UNIQUE INDEX operator_tokens_live_name ON operator_tokens (operator, name) WHERE revoked_at IS NULL;
CREATE INDEX operator_tokens_operator ON operator_tokens (operator, created_at);

-- Which credential made each audited change: the shared admin token (the bootstrap and
-- break-glass credential), an operator's console session, or an operator token (named by
-- its ID and name). Entries from before this migration have none ('').
ALTER TABLE audit_log ADD COLUMN credential text NOT NULL DEFAULT ''
	CHECK (credential IN ('', 'admin_token', 'session', 'oidc_session', 'operator_token'));
ALTER TABLE audit_log ADD COLUMN token_id text NOT NULL DEFAULT '';
ALTER TABLE audit_log ADD COLUMN token_name text NOT NULL DEFAULT '';
