-- A model's routing policy (scored, weighted, least_load, affinity; empty: the nodes'
-- default) and a route's metrics endpoint (empty: the base URL's host /metrics; "off").
ALTER TABLE models ADD COLUMN routing text NOT NULL DEFAULT '';
ALTER TABLE routes ADD COLUMN metrics_url text NOT NULL DEFAULT '';
