-- The region name a data-plane node reports when it polls for a snapshot (its --region,
-- e.g. se-sto; empty when it has none), shown by gatewayctl nodes list.
ALTER TABLE nodes ADD COLUMN region text NOT NULL DEFAULT '';
