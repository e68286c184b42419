-- Refund and dispute events name their payment intent; an event that arrives before any
-- checkout event of its payment named that intent is recorded with outcome
-- unknown_session and these columns, and applied when the checkout event names it
-- (controlplane/payments).
ALTER TABLE payment_events
	ADD COLUMN payment_intent_id text NOT NULL DEFAULT '',
	ADD COLUMN charge_id text NOT NULL DEFAULT '',
	ADD COLUMN dispute_id text NOT NULL DEFAULT '',
	ADD COLUMN reason text NOT NULL DEFAULT '';
CREATE INDEX payment_events_pending ON payment_events (payment_intent_id)
	WHERE outcome = 'unknown_session' AND payment_intent_id <> '';
