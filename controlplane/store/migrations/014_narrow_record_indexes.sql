-- Request records are the hottest table: every index costs every ingested record an
-- insertion. The listing indexes no longer carry the request ID (30 bytes of every
-- entry): a page is found by (account or key, ts) and the rare records sharing a ts are
-- put in request ID order by the query (incremental sort), so keyset pagination on
-- (ts, request_id) is unchanged. Rebuilding them locks the table against writes for
-- the build; nodes keep usage in their spools meanwhile and resend it.
DROP INDEX request_records_account_ts;
CREATE INDEX request_records_account_ts ON request_records (account_id, ts DESC);
DROP INDEX request_records_key_ts;
CREATE INDEX request_records_key_ts ON request_records (key_id, ts DESC) WHERE key_id IS NOT NULL;
