-- Payment-provider events and the credits they caused (controlplane/payments).
-- A credit is applied once per event and once per checkout session: both IDs are unique
-- here and are inserted in the same transaction as the ledger entry (kind topup,
-- reference = checkout session ID).

CREATE TABLE payment_events (
	event_id            text PRIMARY KEY CHECK (event_id <> ''),
	type                text NOT NULL,
	checkout_session_id text NOT NULL DEFAULT '',
	-- No foreign key: an event naming an unknown account is recorded too.
	account_id          text NOT NULL DEFAULT '',
	payment_status      text NOT NULL DEFAULT '',
	amount_ore          bigint NOT NULL DEFAULT 0,
	currency            text NOT NULL DEFAULT '',
	livemode            boolean NOT NULL DEFAULT false,
	-- credited, already_credited, not_paid, payment_failed, unknown_account, rejected
	outcome             text NOT NULL,
	provider_created_at timestamptz,
	received_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payment_events_session ON payment_events (checkout_session_id);
CREATE INDEX payment_events_received ON payment_events (received_at);

CREATE TABLE payment_credits (
	checkout_session_id text PRIMARY KEY CHECK (checkout_session_id <> ''),
	account_id          text NOT NULL REFERENCES accounts (id),
	event_id            text NOT NULL REFERENCES payment_events (event_id),
	amount_ore          bigint NOT NULL CHECK (amount_ore > 0),
	amount_micro_sek    bigint NOT NULL CHECK (amount_micro_sek > 0),
	credited_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payment_credits_account ON payment_credits (account_id, credited_at);
