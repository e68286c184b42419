-- Core schema of the control plane: accounts, keys, catalogue, ledger, usage, nodes.
-- Migrations are numbered files applied in order on start (tern); add new files, never
-- edit applied ones.

-- Bumps the snapshot: every change to what a data-plane node serves notifies
-- gateway_changed; the control plane debounces and recompiles.
CREATE FUNCTION notify_gateway_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('gateway_changed', TG_TABLE_NAME);
	RETURN NULL;
END $$;

CREATE TABLE accounts (
	id         text PRIMARY KEY CHECK (id ~ '^acct_[0-9a-f]{16}$'),
	customer   text NOT NULL CHECK (customer <> '' AND length(customer) <= 200),
	residency  text NOT NULL CHECK (residency IN ('se', 'eu', 'any')),
	suspended  boolean NOT NULL DEFAULT false,
	limits     jsonb,
	created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
	id         text PRIMARY KEY CHECK (id ~ '^key_[0-9a-f]{12}$'),
	account_id text NOT NULL REFERENCES accounts (id),
	name       text NOT NULL DEFAULT '' CHECK (length(name) <= 200),
	hash       text NOT NULL UNIQUE CHECK (hash ~ '^[0-9a-f]{64}$'),
	limits     jsonb,
	created_at timestamptz NOT NULL DEFAULT now(),
	expires_at timestamptz,
	revoked_at timestamptz
);
CREATE INDEX api_keys_account ON api_keys (account_id, created_at);

CREATE TABLE models (
	id                     text PRIMARY KEY CHECK (id <> '' AND length(id) <= 200),
	endpoint               text NOT NULL,
	created                bigint NOT NULL DEFAULT 0 CHECK (created >= 0),
	context_tokens         bigint NOT NULL DEFAULT 0 CHECK (context_tokens >= 0),
	tokenizer              text NOT NULL DEFAULT '',
	input_ore_per_million  bigint NOT NULL CHECK (input_ore_per_million >= 0),
	output_ore_per_million bigint NOT NULL CHECK (output_ore_per_million >= 0)
);

-- One row per alias: the primary key makes an alias resolve to exactly one model.
CREATE TABLE model_aliases (
	alias    text PRIMARY KEY CHECK (alias <> '' AND length(alias) <= 200),
	model_id text NOT NULL REFERENCES models (id) ON DELETE CASCADE,
	position int NOT NULL DEFAULT 0
);
CREATE INDEX model_aliases_model ON model_aliases (model_id, position);

-- Canonical IDs and aliases share one namespace.
CREATE FUNCTION check_model_names() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_TABLE_NAME = 'model_aliases' THEN
		IF EXISTS (SELECT 1 FROM models WHERE id = NEW.alias) THEN
			RAISE EXCEPTION 'alias % collides with a model id', NEW.alias USING ERRCODE = 'unique_violation';
		END IF;
	ELSE
		IF EXISTS (SELECT 1 FROM model_aliases WHERE alias = NEW.id) THEN
			RAISE EXCEPTION 'model id % collides with an alias', NEW.id USING ERRCODE = 'unique_violation';
		END IF;
	END IF;
	RETURN NEW;
END $$;
CREATE TRIGGER model_aliases_names BEFORE INSERT OR UPDATE ON model_aliases
	FOR EACH ROW EXECUTE FUNCTION check_model_names();
CREATE TRIGGER models_names BEFORE INSERT OR UPDATE ON models
	FOR EACH ROW EXECUTE FUNCTION check_model_names();

CREATE TABLE routes (
	id                    text PRIMARY KEY CHECK (id <> ''),
	model_id              text NOT NULL REFERENCES models (id) ON DELETE CASCADE,
	provider              text NOT NULL CHECK (provider <> ''),
	base_url              text NOT NULL CHECK (base_url <> ''),
	upstream_model        text NOT NULL DEFAULT '',
	credentials_ref       text NOT NULL DEFAULT '',
	protocols             text[] NOT NULL CHECK (cardinality(protocols) > 0),
	translate             boolean NOT NULL DEFAULT false,
	region                text NOT NULL CHECK (region <> ''),
	country               text NOT NULL CHECK (country ~ '^[A-Z]{2}$'),
	priority              int NOT NULL DEFAULT 0,
	weight                int NOT NULL DEFAULT 1 CHECK (weight > 0),
	max_conns             int NOT NULL DEFAULT 0 CHECK (max_conns >= 0),
	connect_timeout_ms    int NOT NULL DEFAULT 0 CHECK (connect_timeout_ms >= 0),
	first_byte_timeout_ms int NOT NULL DEFAULT 0 CHECK (first_byte_timeout_ms >= 0),
	idle_timeout_ms       int NOT NULL DEFAULT 0 CHECK (idle_timeout_ms >= 0),
	total_timeout_ms      int NOT NULL DEFAULT 0 CHECK (total_timeout_ms >= 0)
);
CREATE INDEX routes_model ON routes (model_id);

CREATE TABLE account_models (
	account_id text NOT NULL REFERENCES accounts (id),
	model_id   text NOT NULL REFERENCES models (id) ON DELETE CASCADE,
	PRIMARY KEY (account_id, model_id)
);

-- The ledger is append-only; an account's balance is the sum of its entries.
-- reference makes an entry idempotent: debits use the request ID, credits from payments
-- their event or session ID. NULL references are allowed more than once.
CREATE TABLE ledger (
	id               bigserial PRIMARY KEY,
	account_id       text NOT NULL REFERENCES accounts (id),
	amount_micro_sek bigint NOT NULL,
	kind             text NOT NULL CHECK (kind IN ('credit', 'debit', 'topup')),
	reference        text UNIQUE,
	note             text NOT NULL DEFAULT '',
	created_at       timestamptz NOT NULL DEFAULT now(),
	CHECK ((kind = 'debit' AND amount_micro_sek < 0) OR (kind <> 'debit' AND amount_micro_sek > 0))
);
CREATE INDEX ledger_account ON ledger (account_id, id);

CREATE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'ledger is append-only' USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER ledger_no_update BEFORE UPDATE OR DELETE ON ledger
	FOR EACH ROW EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER ledger_no_truncate BEFORE TRUNCATE ON ledger
	FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();

-- account_balances caches the ledger sum per account, maintained by the store in the same
-- transaction as the ledger entries. seq is the ledger clock value of the account's last
-- change; the clock (ledger_clock) is ticked last in every ledger transaction, under its
-- row lock, so clock order is commit order and "seq > n" finds every change after n.
CREATE TABLE account_balances (
	account_id       text PRIMARY KEY REFERENCES accounts (id),
	balance_micro_sek bigint NOT NULL DEFAULT 0,
	seq              bigint NOT NULL DEFAULT 0
);
CREATE INDEX account_balances_seq ON account_balances (seq);

CREATE TABLE ledger_clock (
	one boolean PRIMARY KEY DEFAULT true CHECK (one),
	seq bigint NOT NULL
);
INSERT INTO ledger_clock (seq) VALUES (0);

-- Request records: execution metadata only, never content.
CREATE TABLE request_records (
	request_id        text PRIMARY KEY,
	ts                timestamptz NOT NULL,
	account_id        text NOT NULL,
	key_id            text,
	model             text NOT NULL,
	endpoint          text NOT NULL DEFAULT '',
	stream            boolean NOT NULL DEFAULT false,
	provider          text NOT NULL DEFAULT '',
	residency         text NOT NULL DEFAULT '',
	status            int NOT NULL,
	result            text NOT NULL,
	prompt_tokens     bigint NOT NULL DEFAULT 0,
	completion_tokens bigint NOT NULL DEFAULT 0,
	price_micro_sek   bigint NOT NULL DEFAULT 0,
	duration_ms       bigint NOT NULL DEFAULT 0,
	routing           jsonb,
	node_id           text NOT NULL DEFAULT '',
	received_at       timestamptz NOT NULL DEFAULT now()
);
-- Keyset pagination, newest first, per account and per key.
CREATE INDEX request_records_account_ts ON request_records (account_id, ts DESC, request_id DESC);
CREATE INDEX request_records_key_ts ON request_records (key_id, ts DESC, request_id DESC) WHERE key_id IS NOT NULL;
-- Retention deletes the oldest rows in batches.
CREATE INDEX request_records_ts ON request_records (ts);

CREATE TABLE usage_daily (
	account_id        text NOT NULL,
	day               date NOT NULL,
	model             text NOT NULL,
	requests          bigint NOT NULL DEFAULT 0,
	prompt_tokens     bigint NOT NULL DEFAULT 0,
	completion_tokens bigint NOT NULL DEFAULT 0,
	price_micro_sek   bigint NOT NULL DEFAULT 0,
	PRIMARY KEY (account_id, day, model)
);

CREATE TABLE nodes (
	node_id         text PRIMARY KEY,
	applied_version bigint NOT NULL DEFAULT 0,
	last_seen       timestamptz NOT NULL
);

-- The current snapshot version and the hash of its content. Compilers lock this row, so
-- replicas agree on versions: a version bumps only when the content hash changes.
CREATE TABLE snapshot_state (
	one          boolean PRIMARY KEY DEFAULT true CHECK (one),
	version      bigint NOT NULL,
	hash         text NOT NULL,
	generated_at timestamptz NOT NULL
);
INSERT INTO snapshot_state (version, hash, generated_at) VALUES (0, '', now());

CREATE TRIGGER accounts_changed AFTER INSERT OR UPDATE OR DELETE ON accounts
	FOR EACH STATEMENT EXECUTE FUNCTION notify_gateway_changed();
CREATE TRIGGER api_keys_changed AFTER INSERT OR UPDATE OR DELETE ON api_keys
	FOR EACH STATEMENT EXECUTE FUNCTION notify_gateway_changed();
CREATE TRIGGER models_changed AFTER INSERT OR UPDATE OR DELETE ON models
	FOR EACH STATEMENT EXECUTE FUNCTION notify_gateway_changed();
CREATE TRIGGER model_aliases_changed AFTER INSERT OR UPDATE OR DELETE ON model_aliases
	FOR EACH STATEMENT EXECUTE FUNCTION notify_gateway_changed();
CREATE TRIGGER routes_changed AFTER INSERT OR UPDATE OR DELETE ON routes
	FOR EACH STATEMENT EXECUTE FUNCTION notify_gateway_changed();
CREATE TRIGGER account_models_changed AFTER INSERT OR UPDATE OR DELETE ON account_models
	FOR EACH STATEMENT EXECUTE FUNCTION notify_gateway_changed();
