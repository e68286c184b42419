-- Two database roles: the role that runs these migrations owns the schema; the control
-- plane serves as a login role that is a member of gateway_runtime (NOLOGIN), which may
-- append to the ledger but never change or remove what it holds.
--
-- gateway_runtime may not UPDATE, DELETE or TRUNCATE the ledger, cannot drop or disable its
-- triggers (only the owner can), and cannot write account_balances or ledger_clock: an
-- AFTER INSERT trigger on the ledger (SECURITY DEFINER, running as the owner) adds each
-- statement's entries to the balances, ticks the ledger clock and stamps the changed rows,
-- so a balance is always the sum of its ledger entries.
--
-- The role is created here when it is missing and the migrating role may create roles;
-- otherwise an operator creates it first (README, "Payments and database roles").

DO $$
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'gateway_runtime') THEN
		BEGIN
			CREATE ROLE gateway_runtime NOLOGIN;
		EXCEPTION WHEN duplicate_object OR unique_violation THEN
			NULL; -- created concurrently by another database's migration
		END;
	END IF;
END $$;

-- Balances follow the ledger. Callers lock the balance rows first (lock_balances, in
-- account order, so concurrent transactions cannot deadlock); the trigger locks them again
-- in the same order for any other writer. The clock's row lock is held until commit, so
-- clock order is commit order and "seq > n" finds every change after n.
CREATE FUNCTION ledger_apply_balances() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
	SET search_path = public, pg_temp AS $$
DECLARE
	s bigint;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM new_entries) THEN
		RETURN NULL;
	END IF;
	PERFORM 1 FROM account_balances
		WHERE account_id IN (SELECT account_id FROM new_entries) ORDER BY account_id FOR UPDATE;
	UPDATE ledger_clock SET seq = seq + 1 RETURNING seq INTO s;
	UPDATE account_balances b SET balance_micro_sek = b.balance_micro_sek + d.amount, seq = s
		FROM (SELECT account_id, sum(amount_micro_sek)::bigint AS amount FROM new_entries GROUP BY account_id) d
		WHERE b.account_id = d.account_id;
	PERFORM pg_notify('gateway_balances', s::text);
	RETURN NULL;
END $$;
CREATE TRIGGER ledger_balances AFTER INSERT ON ledger
	REFERENCING NEW TABLE AS new_entries
	FOR EACH STATEMENT EXECUTE FUNCTION ledger_apply_balances();

-- Row locks on balances for the runtime role, which may not SELECT ... FOR UPDATE them.
CREATE FUNCTION lock_balances(ids text[]) RETURNS TABLE (account_id text, balance_micro_sek bigint) LANGUAGE sql
	SECURITY DEFINER SET search_path = public, pg_temp AS $$
	SELECT b.account_id, b.balance_micro_sek FROM account_balances b WHERE b.account_id = ANY (ids)
		ORDER BY b.account_id FOR UPDATE
$$;
REVOKE ALL ON FUNCTION lock_balances(text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger_apply_balances() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lock_balances(text[]) TO gateway_runtime;

-- Grants: everything the control plane reads and writes, except the money tables.
GRANT USAGE ON SCHEMA public TO gateway_runtime;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO gateway_runtime;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO gateway_runtime;
REVOKE INSERT, UPDATE, DELETE ON ledger, account_balances, ledger_clock, schema_version FROM gateway_runtime;
GRANT INSERT ON ledger TO gateway_runtime;
-- A new account's zero balance row: the account ID only, balance and seq take defaults.
GRANT INSERT (account_id) ON account_balances TO gateway_runtime;
-- Tables and sequences later migrations create get the same grants; a later migration that
-- adds money tables revokes what the runtime must not do, as above.
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO gateway_runtime;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO gateway_runtime;
