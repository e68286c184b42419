package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sekgate/gateway/controlplane/pgtest"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/usage"
)

// TestRuntimeRoleCannotRewriteMoney runs every forbidden statement as the runtime role and
// expects Postgres' insufficient_privilege (42501), then checks that the allowed paths
// (credits, refunds, usage debits) still keep balance = Σ ledger.
func TestRuntimeRoleCannotRewriteMoney(t *testing.T) {
	t.Parallel()
	db := pgtest.NewRoles(t)
	s := openStore(t, db)
	ctx := context.Background()
	a, err := s.CreateAccount(ctx, "Acme AB", "se")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddCredit(ctx, store.Credit{AccountID: a.ID, AmountMicroSEK: 10_000_000, Kind: store.KindCredit, Reference: "c1"}); err != nil {
		t.Fatal(err)
	}
	owns, role, err := s.OwnsLedger(ctx)
	if err != nil || owns || role != pgtest.RuntimeLogin {
		t.Fatalf("OwnsLedger = %v, %q, %v; want false for %s", owns, role, err, pgtest.RuntimeLogin)
	}

	rt, err := pgx.Connect(ctx, db.RuntimeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	for _, stmt := range []string{
		`UPDATE ledger SET amount_micro_sek = 1`,
		`DELETE FROM ledger`,
		`TRUNCATE ledger`,
		`DROP TRIGGER ledger_no_update ON ledger`,
		`DROP TRIGGER ledger_balances ON ledger`,
		`ALTER TABLE ledger DISABLE TRIGGER ALL`,
		`ALTER TABLE ledger DISABLE TRIGGER ledger_no_update`,
		`DROP TABLE ledger`,
		`UPDATE account_balances SET balance_micro_sek = balance_micro_sek + 1000000`,
		`UPDATE account_balances SET seq = 0`,
		`DELETE FROM account_balances`,
		`TRUNCATE account_balances`,
		`INSERT INTO account_balances (account_id, balance_micro_sek) VALUES ('acct_00000000000000ff', 5)`,
		`UPDATE ledger_clock SET seq = seq + 1`,
		`SELECT * FROM account_balances FOR UPDATE`,
		`DROP FUNCTION ledger_apply_balances() CASCADE`,
		`CREATE OR REPLACE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`,
	} {
		_, err := rt.Exec(ctx, stmt)
		var pg *pgconn.PgError
		if !errors.As(err, &pg) || pg.Code != "42501" {
			t.Errorf("%s as the runtime role: %v; want insufficient_privilege", stmt, err)
		}
	}

	// The allowed paths: a credit, a refund below zero, usage debits.
	var refund store.CreditResult
	if err := s.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		refund, err = s.RefundTx(ctx, tx, store.Credit{AccountID: a.ID, AmountMicroSEK: -15_000_000, Reference: "refund:ch_1:1500"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !refund.Applied || refund.BalanceMicroSEK != -5_000_000 || refund.Entry.Kind != store.KindRefund {
		t.Fatalf("refund result %+v", refund)
	}
	// A model priced at 100 öre per million input tokens: a token costs 1 micro-SEK.
	if _, err := s.Pool().Exec(ctx, `INSERT INTO models (id, endpoint, input_ore_per_million, output_ore_per_million)
		VALUES ('m', '/v1/chat/completions', 100, 0)`); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if _, err := s.IngestBatch(ctx, usage.Batch{BatchID: "b1", NodeID: "n1", Records: []usage.Record{
		{RequestID: "req_t1", TS: now, AccountID: a.ID, Model: "m", Status: 200, Result: "ok", PromptTokens: 1234, PriceMicroSEK: 1234},
		{RequestID: "req_t2", TS: now, AccountID: a.ID, Model: "m", Status: 200, Result: "ok", PromptTokens: 766, PriceMicroSEK: 766},
	}}); err != nil {
		t.Fatal(err)
	}
	sum, err1 := s.LedgerSum(ctx, a.ID)
	bal, err2 := s.Balance(ctx, a.ID)
	if err1 != nil || err2 != nil || bal != sum || bal != 10_000_000-15_000_000-2000 {
		t.Fatalf("balance %d, ledger sum %d (%v %v)", bal, sum, err1, err2)
	}
	// A refund must be negative and carry a reference.
	for _, bad := range []store.Credit{
		{AccountID: a.ID, AmountMicroSEK: 5, Reference: "r"},
		{AccountID: a.ID, AmountMicroSEK: -5},
	} {
		err := s.InTx(ctx, func(tx pgx.Tx) error { _, err := s.RefundTx(ctx, tx, bad); return err })
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("refund %+v: %v, want invalid", bad, err)
		}
	}
}

// TestSingleRoleOwnsLedger: a store serving as the schema owner reports it.
func TestSingleRoleOwnsLedger(t *testing.T) {
	t.Parallel()
	db := pgtest.NewRoles(t)
	s := openStore(t, pgtest.Roles{OwnerURL: db.OwnerURL, RuntimeURL: db.OwnerURL})
	owns, _, err := s.OwnsLedger(context.Background())
	if err != nil || !owns {
		t.Fatalf("OwnsLedger as the owner = %v, %v; want true", owns, err)
	}
}
