-- The routes whose circuit breaker a data-plane node last reported as not closed (route ID
-- to "open" or "half-open"; {} when all were closed), with its snapshot polls, and when it
-- reported; NULL: never reported. The console shows them beside the routes.
ALTER TABLE nodes
	ADD COLUMN breakers jsonb,
	ADD COLUMN breakers_reported_at timestamptz;
