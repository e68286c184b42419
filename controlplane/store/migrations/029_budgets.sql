-- Spend budgets (shared/snapshot.Budget): a cap on what an account, or one of its keys,
-- may spend per period (a UTC day, an ISO week from Monday, or a UTC calendar month).
-- Nodes enforce them like the balance. Both columns NULL: no budget.
ALTER TABLE accounts
	ADD COLUMN budget_period text CONSTRAINT accounts_budget_period_known CHECK (budget_period IN ('day', 'week', 'month')),
	ADD COLUMN budget_micro_sek bigint CONSTRAINT accounts_budget_positive CHECK (budget_micro_sek > 0),
	ADD CONSTRAINT accounts_budget_whole CHECK ((budget_period IS NULL) = (budget_micro_sek IS NULL));
ALTER TABLE api_keys
	ADD COLUMN budget_period text CONSTRAINT api_keys_budget_period_known CHECK (budget_period IN ('day', 'week', 'month')),
	ADD COLUMN budget_micro_sek bigint CONSTRAINT api_keys_budget_positive CHECK (budget_micro_sek > 0),
	ADD CONSTRAINT api_keys_budget_whole CHECK ((budget_period IS NULL) = (budget_micro_sek IS NULL));

-- What each key spent per UTC day of its records, kept by usage ingestion in the batch's
-- transaction as usage_daily is per account: a budget's spend is the sum over the days of
-- its period. Rows are upserted in (key_id, day) order.
CREATE TABLE key_usage_daily (
	key_id          text NOT NULL,
	day             date NOT NULL,
	account_id      text NOT NULL,
	requests        bigint NOT NULL DEFAULT 0,
	price_micro_sek bigint NOT NULL DEFAULT 0,
	PRIMARY KEY (key_id, day)
);
-- The current month's spend (and the week reaching into it) of records stored before this
-- migration, so a key's budget set right after the upgrade counts it.
INSERT INTO key_usage_daily (key_id, day, account_id, requests, price_micro_sek)
	SELECT key_id, (ts AT TIME ZONE 'UTC')::date, min(account_id), count(*), sum(price_micro_sek)::bigint
	FROM request_records
	WHERE key_id IS NOT NULL AND ts >= date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '7 days'
	GROUP BY 1, 2;
