-- Whether nodes send a route new requests (shared/snapshot.Route.State): '' enabled,
-- 'disabled' not used, 'draining' no new requests while those in flight finish. Set by
-- PATCH /admin/v1/routes/{id} and by a catalogue load, whose file is the truth: a route it
-- lists without a state is enabled again.
ALTER TABLE routes ADD COLUMN state text NOT NULL DEFAULT ''
	CONSTRAINT routes_state_known CHECK (state IN ('', 'disabled', 'draining'));
