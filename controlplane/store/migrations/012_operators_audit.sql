-- Operators of the console and the admin API, their sessions, and the audit log of every
-- change made through the admin API. Ledger adjustments by operators get their own kind.

-- Named operators with a role: viewer reads, operator also changes accounts, keys and
-- signups, admin also loads the catalogue and manages operators. password_hash is an
-- Argon2id PHC string; the password itself is never stored.
CREATE TABLE operators (
	name          text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
	role          text NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
	password_hash text NOT NULL CHECK (password_hash LIKE '$argon2id$%'),
	disabled      boolean NOT NULL DEFAULT false,
	created_at    timestamptz NOT NULL DEFAULT now()
);

-- Sessions: the token is shown to its holder once and stored as its SHA-256; csrf is the
-- session's form token (the console puts it in every form).
CREATE TABLE operator_sessions (
	token_hash text PRIMARY KEY CHECK (token_hash ~ '^[0-9a-f]{64}$'),
	operator   text NOT NULL REFERENCES operators (name) ON DELETE CASCADE,
	csrf       text NOT NULL CHECK (csrf ~ '^[0-9a-f]{64}$'),
	created_at timestamptz NOT NULL DEFAULT now(),
	expires_at timestamptz NOT NULL
);
CREATE INDEX operator_sessions_expiry ON operator_sessions (expires_at);

-- The audit log is append-only, like the ledger: one row per change attempted through the
-- admin API, with who, what, the target's state before and the answer after.
CREATE TABLE audit_log (
	id       bigserial PRIMARY KEY,
	at       timestamptz NOT NULL DEFAULT now(),
	actor    text NOT NULL CHECK (actor <> ''),
	role     text NOT NULL,
	action   text NOT NULL CHECK (action <> ''),
	target   text NOT NULL DEFAULT '',
	status   int NOT NULL,
	request  jsonb,
	before   jsonb,
	after    jsonb
);
CREATE INDEX audit_log_target ON audit_log (target, id) WHERE target <> '';

CREATE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'audit_log is append-only' USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER audit_no_update BEFORE UPDATE OR DELETE ON audit_log
	FOR EACH ROW EXECUTE FUNCTION audit_append_only();
CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit_log
	FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only();
-- The runtime role appends and reads; it can neither change nor remove an entry, nor drop
-- the triggers (only the owner can).
REVOKE UPDATE, DELETE, TRUNCATE ON audit_log FROM gateway_runtime;
GRANT SELECT, INSERT ON audit_log TO gateway_runtime;
GRANT USAGE, SELECT ON SEQUENCE audit_log_id_seq TO gateway_runtime;

-- Manual adjustments by operators: either sign, always with a reason (the entry's note).
ALTER TABLE ledger DROP CONSTRAINT ledger_kind_check;
ALTER TABLE ledger ADD CONSTRAINT ledger_kind_check CHECK (kind IN ('credit', 'debit', 'topup', 'refund', 'adjustment'));
ALTER TABLE ledger DROP CONSTRAINT ledger_sign_check;
ALTER TABLE ledger ADD CONSTRAINT ledger_sign_check CHECK (
	(kind IN ('debit', 'refund') AND amount_micro_sek < 0)
	OR (kind = 'adjustment' AND amount_micro_sek <> 0 AND note <> '')
	OR (kind NOT IN ('debit', 'refund', 'adjustment') AND amount_micro_sek > 0));
