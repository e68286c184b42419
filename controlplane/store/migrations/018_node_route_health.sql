-- What each data-plane node last reported, with its snapshot polls, of the routes it cannot
-- use because of their configuration (route ID to problem: credential_missing, unreachable,
-- tls, unauthorized), and the names (never the values) of the route credentials it has, so
-- that a catalogue naming one that nodes lack is warned about before it is loaded.
ALTER TABLE nodes
	ADD COLUMN route_problems jsonb,
	ADD COLUMN credentials text[],
	ADD COLUMN route_health_reported_at timestamptz;
