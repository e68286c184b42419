-- Requests data-plane nodes refused after authenticating them and before routing them
-- (402, 403, 404, 413, 429, …), which never become request records: per UTC day, account,
-- key, status and error code, for the operator's "why does my customer get 402?". Nodes
-- report them now and then; counts are diagnostics, kept as long as the records.
CREATE TABLE refusals_daily (
	day        date NOT NULL,
	account_id text NOT NULL,
	key_id     text NOT NULL DEFAULT '',
	status     integer NOT NULL,
	code       text NOT NULL DEFAULT '',
	count      bigint NOT NULL,
	PRIMARY KEY (account_id, day, key_id, status, code)
);
