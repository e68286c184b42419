package chaos

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/deploy/tools/proc"
)

// TestChaosShort is make chaos at small scale, part of make test: every scenario runs
// against the real binaries and Postgres and must pass every check - every X-Request-Id
// answered 200 has its record, debits equal the served usage's prices, balance − Σ ledger
// is 0, the spools drain, hostile answers are bounded and garbage streams are not relayed
// as success.
func TestChaosShort(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the deployment's processes for most of a minute; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bin := os.Getenv("CHAOS_BIN_DIR") // prebuilt simulator, controlplane, dataplane
	if bin == "" {
		bin = t.TempDir()
		if err := proc.Build(ctx, bin, "./cmd/dataplane", "./cmd/controlplane", "./deploy/cmd/simulator"); err != nil {
			t.Fatal(err)
		}
	}
	var progress strings.Builder
	rep, err := Run(ctx, Config{BinDir: bin, WorkDir: t.TempDir(), Short: true,
		Warm: 1500 * time.Millisecond, Down: 1500 * time.Millisecond, Cool: 1500 * time.Millisecond, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	var table strings.Builder
	rep.Print(&table)
	t.Logf("\n%s", table.String())
	if len(rep.Rows) != len(scenarios) {
		t.Fatalf("%d scenarios ran, want %d", len(rep.Rows), len(scenarios))
	}
	for _, row := range rep.Rows {
		if row.Sent == 0 || row.RecordsFound == 0 || row.MicroDebited == 0 || row.LedgerGap != "0" {
			t.Errorf("%s: no load measured or ledger gap: %+v", row.Scenario, row)
		}
	}
	if !rep.Passed() {
		t.Fatalf("chaos scenarios failed (see the table and notes)")
	}
}
