-- Alert rules the control plane evaluates on an interval (controlplane/alerts), what they
-- found standing (so a standing condition alerts once, and again when it clears), and the
-- webhook deliveries of their events with their retries.
CREATE TABLE alert_rules (
	id          text PRIMARY KEY CHECK (id ~ '^alr_[0-9a-f]{16}$'),
	name        text NOT NULL CHECK (name <> '' AND char_length(name) <= 200),
	kind        text NOT NULL CHECK (kind IN ('balance_below', 'budget_used_above', 'route_problem', 'spool_age_above', 'node_silent')),
	-- account_id narrows balance and budget rules to one account; NULL: every account.
	account_id  text REFERENCES accounts (id) ON DELETE CASCADE,
	-- threshold: micro-SEK (balance_below), percent (budget_used_above), milliseconds
	-- (spool_age_above, node_silent); unused by route_problem.
	threshold   bigint NOT NULL DEFAULT 0 CHECK (threshold >= 0),
	webhook_url text NOT NULL CHECK (webhook_url ~ '^https?://' AND char_length(webhook_url) <= 2000),
	-- secret is the rule's HMAC-SHA256 signing key, shown once when the rule is created.
	secret      text NOT NULL,
	enabled     boolean NOT NULL DEFAULT true,
	created_at  timestamptz NOT NULL
);

-- One row per (rule, subject) whose condition holds, since when.
CREATE TABLE alert_states (
	rule_id  text NOT NULL REFERENCES alert_rules (id) ON DELETE CASCADE,
	subject  text NOT NULL,
	since    timestamptz NOT NULL,
	PRIMARY KEY (rule_id, subject)
);

CREATE TABLE alert_deliveries (
	id              bigserial PRIMARY KEY,
	rule_id         text NOT NULL REFERENCES alert_rules (id) ON DELETE CASCADE,
	subject         text NOT NULL,
	event           text NOT NULL CHECK (event IN ('firing', 'resolved')),
	payload         jsonb NOT NULL,
	state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
	attempts        int NOT NULL DEFAULT 0,
	last_status     int NOT NULL DEFAULT 0,
	last_error      text NOT NULL DEFAULT '',
	created_at      timestamptz NOT NULL,
	next_attempt_at timestamptz NOT NULL,
	delivered_at    timestamptz
);
CREATE INDEX alert_deliveries_due ON alert_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX alert_deliveries_recent ON alert_deliveries (created_at DESC, id DESC);
