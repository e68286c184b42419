-- Why an operator suspended an account, as they gave it (admin API suspension_reason,
-- gatewayctl accounts suspend --reason, the console); empty when none was given or the
-- account is not suspended. A suspension for a payment dispute says so.
ALTER TABLE accounts ADD COLUMN suspension_reason text NOT NULL DEFAULT ''
	CONSTRAINT accounts_suspension_reason_length CHECK (char_length(suspension_reason) <= 1000);
