package benchingest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/deploy/tools/proc"
)

// TestSmoke runs bench-ingest at toy scale against a freshly built control plane and a
// throwaway Postgres: the machinery works, and every figure it reports was measured.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the binaries; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := t.TempDir()
	if err := proc.Build(ctx, bin, "./cmd/controlplane"); err != nil {
		t.Fatal(err)
	}
	out, profiles := t.TempDir(), t.TempDir()
	var progress strings.Builder
	rep, err := Run(ctx, Config{BinDir: bin, OutDir: out, WorkDir: t.TempDir(), Nodes: []int{2}, Batches: []int{50},
		Duration: time.Second, Accounts: 3, Progress: &progress, ProfileDir: profiles, SizeFill: 3000})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if len(rep.Results) != 1 {
		t.Fatalf("%d results, want 1", len(rep.Results))
	}
	r := rep.Results[0]
	if r.Records == 0 || r.Records%50 != 0 || r.RecordsPerSec <= 0 || r.CPPer1000 <= 0 || r.PGPer1000 <= 0 ||
		r.P50MS <= 0 || r.P99MS < r.P50MS || r.Growth["records_heap"] <= 0 || r.Growth["records_indexes"] <= 0 || r.LoadAfter == "?" {
		t.Fatalf("implausible figures: %+v", r)
	}
	// Every scenario starts on empty records; the table-size rows run it on empty records and
	// then on the filled ones.
	if r.StartRecords != 0 {
		t.Errorf("scenario started on %d records, want none", r.StartRecords)
	}
	if ts := rep.TableSize; len(ts) != 2 || ts[0].StartRecords != 0 || ts[1].StartRecords != 3000 || ts[0].Nodes != 2 ||
		ts[1].BatchSize != 50 || ts[0].Records == 0 || ts[1].Records == 0 || ts[1].PGPer1000 <= 0 {
		t.Errorf("table-size rows: %+v", ts)
	}
	if md := rep.Markdown(); !strings.Contains(md, "## Table size") || !strings.Contains(md, "| 2 | 50 | 3000 |") {
		t.Errorf("table-size rows not in the table:\n%s", md)
	}
	// What the last run (the filled table-size row) left is removed: half deleted, the rest
	// with their day dropped. The count is the last run's own, whatever the machine's load
	// made each scenario ingest. Postgres's CPU for the deletes may read zero: the kernel
	// reports CPU time in 10-ms ticks, and deleting this toy scale's two thousand records
	// can take less than one (the ingest's own Postgres figure, over a second, is checked
	// above).
	if len(rep.TableSize) == 0 {
		t.Fatal("no table-size rows")
	}
	last := rep.TableSize[len(rep.TableSize)-1]
	if x := rep.Retention; x == nil || x.Present < last.StartRecords+last.Records || x.Deleted+x.Dropped != x.Present ||
		x.Deleted == 0 || x.Dropped == 0 || x.DroppedDays == 0 || x.DeletePGPer1000 < 0 || x.DeletedPerSecond <= 0 {
		t.Fatalf("retention not measured: %+v (the last run started on %d records and added %d)", rep.Retention, last.StartRecords, last.Records)
	}
	// The control plane's CPU profile of the scenario (gzip-compressed protobuf).
	if b, err := os.ReadFile(filepath.Join(profiles, "controlplane-2x50.pprof")); err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("no control-plane profile: %v", err)
	}
	for _, f := range []string{"ingest.json", "ingest.md", "ingest.svg"} {
		if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
}
