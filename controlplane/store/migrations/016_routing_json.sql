-- A record's routing is stored as json (its text, checked to be JSON) in routing_json, not
-- as jsonb: jsonb parses every routing into its binary form on insert, which cost Postgres
-- about a tenth of its CPU per ingested record (make bench-ingest, deploy/bench/ingest.md),
-- and the stored text is smaller; routing is only ever read back whole. Adding the column
-- rewrites nothing: records stored before keep their routing in the jsonb column routing,
-- and reads take whichever is set (COALESCE(routing_json, routing::json)). Once retention has
-- removed every record from before this migration (routing IS NOT NULL finds none), a later
-- migration can drop routing.
ALTER TABLE request_records ADD COLUMN routing_json json;
