-- Access requests from the public form, kept for operator review (controlplane/signup).
-- Submitting creates nothing else; approval may create the account (account_id).

CREATE TABLE signups (
	id           text PRIMARY KEY CHECK (id ~ '^sgn_[0-9a-f]{16}$'),
	name         text NOT NULL CHECK (name <> '' AND length(name) <= 200),
	email        text NOT NULL CHECK (email <> '' AND length(email) <= 254),
	company      text NOT NULL DEFAULT '' CHECK (length(company) <= 200),
	residency    text NOT NULL DEFAULT '' CHECK (length(residency) <= 200),
	volume       text NOT NULL DEFAULT '' CHECK (length(volume) <= 200),
	use_case     text NOT NULL DEFAULT '' CHECK (length(use_case) <= 4000),
	client_addr  text NOT NULL DEFAULT '',
	-- The form requires consent = yes; this is when it was given.
	consented_at timestamptz NOT NULL,
	status       text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected')),
	created_at   timestamptz NOT NULL DEFAULT now(),
	decided_at   timestamptz,
	account_id   text REFERENCES accounts (id),
	CHECK ((status = 'pending') = (decided_at IS NULL)),
	CHECK (account_id IS NULL OR status = 'approved')
);
-- One pending request per email: a repeated submission is dropped silently.
CREATE UNIQUE INDEX signups_pending_email ON signups (lower(email)) WHERE status = 'pending';
CREATE INDEX signups_status_created ON signups (status, created_at DESC);
CREATE INDEX signups_created ON signups (created_at DESC);
