package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sekgate/gateway/controlplane/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestDatabasesAreIsolated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := pgtest.NewDatabase(t), pgtest.NewDatabase(t)
	if a == b {
		t.Fatalf("two databases share a URL: %s", a)
	}
	ca, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close(ctx)
	if _, err := ca.Exec(ctx, "CREATE TABLE only_in_a (x int)"); err != nil {
		t.Fatal(err)
	}
	cb, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close(ctx)
	var n int
	if err := cb.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("table created in one database is visible in another")
	}
}

func TestParallelDatabases(t *testing.T) {
	for _, name := range []string{"one", "two", "three"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, pgtest.NewDatabase(t))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			var got string
			if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got == "postgres" {
				t.Fatalf("test got the maintenance database")
			}
		})
	}
}
