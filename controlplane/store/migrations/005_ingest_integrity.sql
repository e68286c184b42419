-- Usage ingest that no node can break (controlplane/store/usage.go).
--
-- rejected_records keeps every record of a usage batch the control plane could not accept
-- (bad bounds, a price that is not the formula's, a sum that would overflow, a record that
-- does not decode), with the reason and the record as the node sent it. The rest of the
-- batch applies; a rejected record is never charged. fingerprint (SHA-256 of reason and
-- raw record) makes a re-sent batch not store the same rejection twice.
CREATE TABLE rejected_records (
	id          bigserial PRIMARY KEY,
	fingerprint text NOT NULL UNIQUE,
	request_id  text NOT NULL DEFAULT '',
	account_id  text NOT NULL DEFAULT '',
	node_id     text NOT NULL DEFAULT '',
	batch_id    text NOT NULL DEFAULT '',
	reason      text NOT NULL,
	raw         text NOT NULL,
	received_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX rejected_records_received ON rejected_records (received_at);

-- model_prices is the history of every model's prices, kept by a trigger on models, so a
-- record priced from a node's slightly older snapshot can be checked against the price in
-- force when the node served it. valid_to is NULL for the current price.
CREATE TABLE model_prices (
	id                     bigserial PRIMARY KEY,
	model_id               text NOT NULL,
	input_ore_per_million  bigint NOT NULL,
	output_ore_per_million bigint NOT NULL,
	valid_from             timestamptz NOT NULL,
	valid_to               timestamptz
);
CREATE INDEX model_prices_model ON model_prices (model_id, valid_to);
INSERT INTO model_prices (model_id, input_ore_per_million, output_ore_per_million, valid_from)
	SELECT id, input_ore_per_million, output_ore_per_million, '-infinity' FROM models;

CREATE FUNCTION track_model_prices() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('UPDATE', 'DELETE') THEN
		IF TG_OP = 'UPDATE' AND NEW.id = OLD.id
			AND NEW.input_ore_per_million = OLD.input_ore_per_million
			AND NEW.output_ore_per_million = OLD.output_ore_per_million THEN
			RETURN NULL;
		END IF;
		UPDATE model_prices SET valid_to = now() WHERE model_id = OLD.id AND valid_to IS NULL;
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		UPDATE model_prices SET valid_to = now() WHERE model_id = NEW.id AND valid_to IS NULL;
		INSERT INTO model_prices (model_id, input_ore_per_million, output_ore_per_million, valid_from)
			VALUES (NEW.id, NEW.input_ore_per_million, NEW.output_ore_per_million, now());
	END IF;
	RETURN NULL;
END $$;
CREATE TRIGGER models_prices AFTER INSERT OR UPDATE OR DELETE ON models
	FOR EACH ROW EXECUTE FUNCTION track_model_prices();

-- Daily aggregates only grow: numeric cannot overflow where bigint would (a single
-- record is bounded, the sum of a day's records is not).
ALTER TABLE usage_daily
	ALTER COLUMN requests TYPE numeric,
	ALTER COLUMN prompt_tokens TYPE numeric,
	ALTER COLUMN completion_tokens TYPE numeric,
	ALTER COLUMN price_micro_sek TYPE numeric;
