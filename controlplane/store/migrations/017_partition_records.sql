-- Request records become a table partitioned by range of request_id, one partition per
-- day, so retention drops a whole day's partition instead of deleting its rows one by
-- one (and vacuuming after). The primary key stays request_id alone, and with it
-- exactly-once: a partitioned table's unique keys must hold the partition key, and here
-- the partition key is the request ID itself.
--
-- A node's request IDs are "req_" and a ULID, whose first ten characters are the
-- millisecond time in Crockford base32, which sorts as the time does; so a UTC day's
-- records are one range of IDs, from request_records_day_bound(day) ("req_", the day's
-- first millisecond in ten characters, sixteen zeros) up to the next day's bound. The
-- column and so the ranges are in the C collation: bounds compare as bytes, in any
-- database locale, as the control plane (controlplane/store, record_days.go) compares them.
--
-- Partitions:
--   request_records_low          MINVALUE up to the first day's bound: every record stored
--                                before this migration (the old table, attached as it is)
--                                and IDs of other forms that sort below "req_0...";
--   request_records_YYYYMMDD     one UTC day each, made ahead of time by the control
--                                plane's retention job (request_records_add_day) and
--                                dropped by it when the day is older than the retention
--                                (request_records_drop_day);
--   request_records_high         "req_8" (above every ULID's time) up to MAXVALUE: IDs of
--                                other forms that sort above the ULIDs (lowercase, "x-...").
-- An ID between the first day's bound and "req_8" whose day has no partition (dropped, or
-- further ahead than the partitions made) has nowhere to go: the ingest refuses that record
-- alone (rejected_records), as it refuses records older than the retention. The two
-- catch-alls keep retention by DELETE on ts as before.
--
-- Upgrading a large table: the old table is not copied. Its request_id moves to the C
-- collation, which rebuilds its primary key index (the heap is not rewritten; the other
-- indexes do not hold the ID), and attaching it scans it once to check that every ID sorts
-- below the first day's bound. Both run in this migration's transaction and block writes to
-- the records meanwhile (for a table of many millions of records, minutes: README,
-- "Scale model"); nodes keep their usage in their spools and resend it after. The first
-- day is today (UTC) when the old table holds no ID of today's or tomorrow's range,
-- otherwise the day after the newest such ID, so today's records stay in the old table.
-- IDs of the old table at or above that day that are not node IDs of today or tomorrow (none
-- a node writes) are moved into the partition that holds them.

CREATE FUNCTION request_records_day_bound(d date) RETURNS text LANGUAGE sql IMMUTABLE STRICT
	SET search_path = public, pg_temp AS $$
	SELECT least('req_' || string_agg(substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((t.ms >> (45 - 5 * i)) & 31)::int + 1, 1), '' ORDER BY i)
		|| '0000000000000000', 'req_8') COLLATE "C"
	FROM (SELECT (extract(epoch FROM d::timestamp) * 1000)::bigint AS ms) t, generate_series(0, 9) AS i
$$;

-- The day whose range holds id: the last day whose bound is at most id (binary search over
-- the days a ULID's time can name). For the migration only.
CREATE FUNCTION pg_temp.request_records_day_of(id text) RETURNS date LANGUAGE plpgsql AS $$
DECLARE
	lo date := '1970-01-01';
	hi date := '10889-08-03'; -- its bound is "req_8", above every ID of the range
	mid date;
BEGIN
	WHILE hi - lo > 1 LOOP
		mid := lo + (hi - lo) / 2;
		IF public.request_records_day_bound(mid) <= id COLLATE "C" THEN
			lo := mid;
		ELSE
			hi := mid;
		END IF;
	END LOOP;
	RETURN lo;
END $$;

ALTER TABLE request_records ALTER COLUMN request_id TYPE text COLLATE "C";
ALTER TABLE request_records RENAME TO request_records_low;
ALTER INDEX request_records_pkey RENAME TO request_records_low_pkey;
ALTER INDEX request_records_account_ts RENAME TO request_records_low_account_ts;
ALTER INDEX request_records_ts RENAME TO request_records_low_ts;

CREATE TABLE request_records (
	request_id        text COLLATE "C" NOT NULL,
	ts                timestamptz NOT NULL,
	account_id        text NOT NULL,
	key_id            text,
	model             text NOT NULL,
	endpoint          text NOT NULL DEFAULT '',
	stream            boolean NOT NULL DEFAULT false,
	provider          text NOT NULL DEFAULT '',
	residency         text NOT NULL DEFAULT '',
	status            int NOT NULL,
	result            text NOT NULL,
	prompt_tokens     bigint NOT NULL DEFAULT 0,
	completion_tokens bigint NOT NULL DEFAULT 0,
	price_micro_sek   bigint NOT NULL DEFAULT 0,
	duration_ms       bigint NOT NULL DEFAULT 0,
	routing           jsonb,
	node_id           text NOT NULL DEFAULT '',
	received_at       timestamptz NOT NULL DEFAULT now(),
	routing_json      json,
	PRIMARY KEY (request_id)
) PARTITION BY RANGE (request_id);
CREATE INDEX request_records_account_ts ON request_records (account_id, ts DESC);
CREATE INDEX request_records_ts ON request_records (ts);
GRANT SELECT, INSERT, UPDATE, DELETE ON request_records TO gateway_runtime;

CREATE TABLE request_records_high PARTITION OF request_records FOR VALUES FROM ('req_8') TO (MAXVALUE);

-- Makes day d's partition unless it exists: a table like the records, attached for d's
-- range (ATTACH locks the records only against other partition changes, not against
-- reads and writes). Returns whether it made it; false also when d's range overlaps another
-- partition (a day below the first day's bound, inside request_records_low). Replicas may
-- call it at once: an advisory lock makes them take turns.
CREATE FUNCTION request_records_add_day(d date) RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER
	SET search_path = public, pg_temp SET lock_timeout = '5s' AS $$
DECLARE
	name text := 'request_records_' || to_char(d, 'YYYYMMDD');
BEGIN
	PERFORM pg_advisory_xact_lock(hashtext('request_records partitions'));
	IF to_regclass(name) IS NOT NULL THEN
		RETURN false;
	END IF;
	BEGIN
		EXECUTE format('CREATE TABLE %I (LIKE request_records INCLUDING DEFAULTS)', name);
		EXECUTE format('ALTER TABLE request_records ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
			name, request_records_day_bound(d), request_records_day_bound(d + 1));
	EXCEPTION WHEN invalid_object_definition THEN -- would overlap another partition
		RETURN false;
	END;
	RETURN true;
END $$;

-- Drops day d's partition, with its records, if it exists. DROP locks the records against
-- reads and writes until it commits (a moment; lock_timeout bounds the wait behind
-- running batches). Only a day partition of request_records can be dropped through it.
CREATE FUNCTION request_records_drop_day(d date) RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER
	SET search_path = public, pg_temp SET lock_timeout = '5s' AS $$
DECLARE
	name text := 'request_records_' || to_char(d, 'YYYYMMDD');
BEGIN
	PERFORM pg_advisory_xact_lock(hashtext('request_records partitions'));
	IF NOT EXISTS (SELECT 1 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
			WHERE i.inhparent = 'request_records'::regclass AND c.relname = name) THEN
		RETURN false;
	END IF;
	EXECUTE format('DROP TABLE %I', name);
	RETURN true;
END $$;
REVOKE ALL ON FUNCTION request_records_add_day(date), request_records_drop_day(date) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION request_records_add_day(date), request_records_drop_day(date) TO gateway_runtime;

DO $$
DECLARE
	today date := (now() AT TIME ZONE 'UTC')::date;
	first date := today;
	newest text;
	d date;
	i int;
BEGIN
	SELECT max(request_id) INTO newest FROM request_records_low
		WHERE request_id >= request_records_day_bound(today) AND request_id < request_records_day_bound(today + 2);
	IF newest IS NOT NULL THEN
		first := pg_temp.request_records_day_of(newest) + 1;
	END IF;
	-- Partitions for the old table's IDs at or above the first day that are not in high.
	FOR d IN SELECT DISTINCT pg_temp.request_records_day_of(request_id) FROM request_records_low
			WHERE request_id >= request_records_day_bound(first) AND request_id < 'req_8' LOOP
		PERFORM request_records_add_day(d);
	END LOOP;
	FOR i IN 0 .. today + 3 - first LOOP
		PERFORM request_records_add_day(first + i);
	END LOOP;
	WITH moved AS (DELETE FROM request_records_low WHERE request_id >= request_records_day_bound(first)
			RETURNING request_id, ts, account_id, key_id, model, endpoint, stream, provider, residency, status, result,
				prompt_tokens, completion_tokens, price_micro_sek, duration_ms, routing, node_id, received_at, routing_json)
		INSERT INTO request_records (request_id, ts, account_id, key_id, model, endpoint, stream, provider, residency, status,
				result, prompt_tokens, completion_tokens, price_micro_sek, duration_ms, routing, node_id, received_at, routing_json)
		SELECT * FROM moved;
	EXECUTE format('ALTER TABLE request_records ATTACH PARTITION request_records_low FOR VALUES FROM (MINVALUE) TO (%L)',
		request_records_day_bound(first));
END $$;
