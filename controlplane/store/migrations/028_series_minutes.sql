-- The live service view: per-minute series of what the ingest applies, per model, route
-- (the route that answered), node (that sent the record) and account. Added in the
-- transaction that inserts newly ingested records, from those records only, so a re-sent
-- batch is not counted twice. Requests and errors by class (error classes are the records'
-- results: upstream_error, timeout, rate_limited, no_route, incomplete and interrupted,
-- anything else not ok; client-caused: rejected, cancelled); tokens and spend (numeric, so
-- no sum can overflow); durations and streams' times to first event as counts per
-- log-spaced bucket (controlplane/loghist: bucket i holds 2^((i-1)/4) to 2^(i/4) ms),
-- trailing empty buckets left out, so percentiles over any range add them up. Kept for the
-- retention job's series days (--series-retention-days).
CREATE TABLE series_minutes (
	dimension         text NOT NULL CHECK (dimension IN ('model', 'route', 'node', 'account')),
	key               text NOT NULL,
	minute            timestamptz NOT NULL,
	requests          bigint NOT NULL,
	err_upstream      bigint NOT NULL,
	err_timeout       bigint NOT NULL,
	err_rate_limited  bigint NOT NULL,
	err_no_route      bigint NOT NULL,
	err_incomplete    bigint NOT NULL,
	err_other         bigint NOT NULL,
	client_rejected   bigint NOT NULL,
	client_cancelled  bigint NOT NULL,
	prompt_tokens     numeric NOT NULL,
	completion_tokens numeric NOT NULL,
	price_micro_sek   numeric NOT NULL,
	duration_buckets  bigint[] NOT NULL,
	ttft_buckets      bigint[] NOT NULL,
	PRIMARY KEY (dimension, key, minute)
);
CREATE INDEX series_minutes_minute ON series_minutes (minute);
