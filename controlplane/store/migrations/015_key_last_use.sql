-- Request records lose their per-key index (request_records_key_ts): every index of this
-- table costs every ingested record an insertion, and this one cost Postgres about a sixth
-- of its CPU per ingested record (make bench-ingest, deploy/bench/ingest.md). What it
-- served is served otherwise:
-- - a key's last use (the admin API's key lists, last_used_at) is kept per key in
--   key_last_use, which the ingest moves forward once per key per batch (and which, unlike
--   the records, retention does not remove);
-- - a listing of one key's records walks its account's index (account_id, ts DESC) and
--   skips the account's other keys' records.
-- Filling the table reads the index once (the newest record of each key); dropping the
-- index briefly locks request_records against writes (nodes keep usage in their spools and
-- resend it).
CREATE TABLE key_last_use (
	key_id  text PRIMARY KEY,
	last_ts timestamptz NOT NULL
);
INSERT INTO key_last_use (key_id, last_ts)
	SELECT k.id, r.ts FROM api_keys k
	CROSS JOIN LATERAL (SELECT ts FROM request_records WHERE key_id = k.id ORDER BY ts DESC LIMIT 1) r;
DROP INDEX request_records_key_ts;
