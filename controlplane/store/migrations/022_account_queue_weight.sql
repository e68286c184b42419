-- An account's weight in the nodes' fair queue, where requests wait when every model server
-- that could serve them is full: weight w gets w turns for each turn of a weight-1 account.
ALTER TABLE accounts ADD COLUMN queue_weight integer NOT NULL DEFAULT 1
	CONSTRAINT accounts_queue_weight_range CHECK (queue_weight BETWEEN 1 AND 100);
