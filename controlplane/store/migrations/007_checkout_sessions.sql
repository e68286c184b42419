-- Checkout sessions the gateway created, refunds and disputes (controlplane/payments).
-- The webhook credits only a session recorded here, for its account, amount, currency and
-- mode; refunds debit the account (ledger kind refund, negative); a dispute suspends it.

CREATE TABLE checkout_sessions (
	id                text PRIMARY KEY CHECK (id <> '' AND length(id) <= 255),
	account_id        text NOT NULL REFERENCES accounts (id),
	amount_ore        bigint NOT NULL CHECK (amount_ore > 0),
	currency          text NOT NULL CHECK (currency <> ''),
	livemode          boolean NOT NULL,
	-- open (created), complete (paid and credited), expired
	status            text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'complete', 'expired')),
	-- The request that created it; the provider call's idempotency key derives from it.
	request_id        text NOT NULL DEFAULT '',
	-- Set from the checkout events; refunds and disputes name the payment intent.
	payment_intent_id text,
	created_at        timestamptz NOT NULL DEFAULT now(),
	provider_created_at timestamptz
);
CREATE INDEX checkout_sessions_account ON checkout_sessions (account_id, created_at);
CREATE INDEX checkout_sessions_payment_intent ON checkout_sessions (payment_intent_id) WHERE payment_intent_id IS NOT NULL;

-- What a refund event may debit: the refunded total of a charge so far (charge.refunded
-- carries the cumulative amount_refunded), so repeated, reordered and partial refund
-- events debit exactly the refunded total.
CREATE TABLE payment_refunds (
	charge_id           text PRIMARY KEY CHECK (charge_id <> ''),
	checkout_session_id text NOT NULL REFERENCES checkout_sessions (id),
	account_id          text NOT NULL REFERENCES accounts (id),
	refunded_ore        bigint NOT NULL CHECK (refunded_ore >= 0),
	updated_at          timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE payment_disputes (
	dispute_id          text PRIMARY KEY CHECK (dispute_id <> ''),
	charge_id           text NOT NULL DEFAULT '',
	checkout_session_id text NOT NULL REFERENCES checkout_sessions (id),
	account_id          text NOT NULL REFERENCES accounts (id),
	amount_ore          bigint NOT NULL DEFAULT 0,
	reason              text NOT NULL DEFAULT '',
	event_id            text NOT NULL,
	created_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payment_disputes_account ON payment_disputes (account_id, created_at);

-- Refunds are negative ledger entries of their own kind.
ALTER TABLE ledger DROP CONSTRAINT ledger_kind_check;
ALTER TABLE ledger ADD CONSTRAINT ledger_kind_check CHECK (kind IN ('credit', 'debit', 'topup', 'refund'));
ALTER TABLE ledger DROP CONSTRAINT ledger_check;
ALTER TABLE ledger ADD CONSTRAINT ledger_sign_check
	CHECK ((kind IN ('debit', 'refund') AND amount_micro_sek < 0) OR (kind NOT IN ('debit', 'refund') AND amount_micro_sek > 0));
