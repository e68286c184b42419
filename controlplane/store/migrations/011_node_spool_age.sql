-- How long the oldest record in a data-plane node's usage spool had waited for the control
-- plane's confirmation when the node last said (it reports it with its snapshot polls,
-- balance polls and usage batches), and when it said so; shown by gatewayctl nodes list.
ALTER TABLE nodes
	ADD COLUMN spool_age_ms bigint NOT NULL DEFAULT 0 CHECK (spool_age_ms >= 0),
	ADD COLUMN spool_reported_at timestamptz;
