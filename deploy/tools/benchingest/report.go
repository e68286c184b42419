package benchingest

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Report is every figure of a run.
type Report struct {
	Mode     string    `json:"mode"`
	Started  time.Time `json:"started"`
	Cores    int       `json:"cores"`
	Accounts int       `json:"accounts"`
	Duration float64   `json:"scenario_s"`
	Command  string    `json:"command"`
	Results  []Result  `json:"results"`
	// TableSize is the table-size rows: the same scenarios on empty records and on records
	// filled first (SizeFill), in pairs.
	TableSize []Result `json:"table_size,omitempty"`
	SizeFill  int64    `json:"size_fill,omitempty"`
	// Retention is what deleting the ingested records cost (nil when not measured).
	Retention *RetentionResult `json:"retention,omitempty"`
}

// Result is one scenario: nodes posting batches of BatchSize records back to back.
type Result struct {
	Nodes     int `json:"nodes"`
	BatchSize int `json:"batch_size"`
	// StartRecords is how many records the table held when the scenario started.
	StartRecords  int64   `json:"start_records"`
	Records       int64   `json:"records"`
	Batches       int     `json:"batches"`
	Seconds       float64 `json:"seconds"`
	RecordsPerSec float64 `json:"records_per_s"`
	// CPPer1000 and PGPer1000 are CPU seconds (user + system) per 1,000 records of the
	// control plane and of Postgres (postmaster, backends, autovacuum, WAL writer).
	CPPer1000 float64 `json:"cp_cpu_s_per_1000"`
	PGPer1000 float64 `json:"pg_cpu_s_per_1000"`
	// VacuumPGPer1000 is Postgres's CPU seconds per 1,000 records for a VACUUM of the
	// records right after the scenario: what autovacuum had not yet done for its records.
	VacuumPGPer1000 float64 `json:"vacuum_pg_cpu_s_per_1000"`
	P50MS           float64 `json:"batch_p50_ms"`
	P99MS           float64 `json:"batch_p99_ms"`
	// Growth is MiB per million records, by relation group (see sizes).
	Growth map[string]float64 `json:"growth_mib_per_million"`
	// MachineBusyPct is how busy both cores were; OthersBusyPct the share of processes
	// other than the control plane, Postgres and this driver (anyone sharing the machine). LoadBefore/LoadAfter are the load averages (1, 5, 15 min) around it.
	MachineBusyPct float64 `json:"machine_busy_pct"`
	// DriverPer1000 is this process's CPU seconds per 1,000 records (building and posting
	// the batches).
	DriverPer1000 float64 `json:"driver_cpu_s_per_1000"`
	OthersBusyPct float64 `json:"others_busy_pct"`
	LoadBefore    string  `json:"load_before"`
	LoadAfter     string  `json:"load_after"`
}

// CPUPer1000 is the control plane's and Postgres's CPU seconds per 1,000 records together.
func (r Result) CPUPer1000() float64 { return r.CPPer1000 + r.PGPer1000 }

// Relation groups whose growth is measured.
var sizeGroups = []struct{ name, sql string }{
	// pg_partition_tree has no rows for a table that is not partitioned.
	{"records_heap", `SELECT COALESCE((SELECT sum(pg_table_size(relid)) FROM pg_partition_tree('request_records')),
		pg_table_size('request_records'))::bigint`},
	{"records_indexes", `SELECT COALESCE((SELECT sum(pg_indexes_size(relid)) FROM pg_partition_tree('request_records')),
		pg_indexes_size('request_records'))::bigint`},
	{"ledger", `SELECT pg_total_relation_size('ledger')`},
	{"usage_daily", `SELECT pg_total_relation_size('usage_daily')`},
	{"database", `SELECT pg_database_size(current_database())`},
}

func sizes(ctx context.Context, db *pgxpool.Pool) (map[string]int64, error) {
	out := map[string]int64{}
	for _, g := range sizeGroups {
		var n int64
		if err := db.QueryRow(ctx, g.sql).Scan(&n); err != nil {
			return nil, fmt.Errorf("size of %s: %w", g.name, err)
		}
		out[g.name] = n
	}
	return out, nil
}

// Best returns the scenario with the most records per second.
func (r *Report) Best() (Result, bool) {
	if len(r.Results) == 0 {
		return Result{}, false
	}
	best := r.Results[0]
	for _, x := range r.Results[1:] {
		if x.RecordsPerSec > best.RecordsPerSec {
			best = x
		}
	}
	return best, true
}

// Markdown is the results table with the run's conditions.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Usage ingest benchmark (%s run, %s)\n\n", r.Mode, r.Started.Format(time.RFC3339))
	fmt.Fprintf(&b, "One control plane and one throwaway Postgres (fsync off) on %d cores; simulated nodes post batches "+
		"back to back for %.0f s per scenario over the node API; records spread over %d accounts. Reproduce: `%s`.\n\n",
		r.Cores, r.Duration, r.Accounts, r.Command)
	b.WriteString("Every scenario starts on empty records (TRUNCATE of `request_records` and `key_last_use`, then a CHECKPOINT, " +
		"before it; the append-only ledger, the balances and the daily aggregates stay), so the rows differ only in node count " +
		"and batch size; each scenario adds its own records (the records column of the JSON). " +
		"The table-size rows below run one scenario on empty records and then on records filled first, back to back.\n\n")
	b.WriteString("| nodes | batch | records/s | CPU-s/1k CP | CPU-s/1k PG | CPU-s/1k both | PG vacuum after, CPU-s/1k | batch p50 ms | batch p99 ms | records MiB/M | record indexes MiB/M | ledger MiB/M | usage_daily MiB/M | driver CPU-s/1k | others' CPU % | load (1 5 15) |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, x := range r.Results {
		fmt.Fprintf(&b, "| %d | %d | %.0f | %.4f | %.4f | %.4f | %.4f | %.1f | %.1f | %.0f | %.0f | %.0f | %.1f | %.4f | %.0f | %s |\n",
			x.Nodes, x.BatchSize, x.RecordsPerSec, x.CPPer1000, x.PGPer1000, x.CPUPer1000(), x.VacuumPGPer1000, x.P50MS, x.P99MS,
			x.Growth["records_heap"], x.Growth["records_indexes"], x.Growth["ledger"], x.Growth["usage_daily"],
			x.DriverPer1000, x.OthersBusyPct, x.LoadAfter)
	}
	if best, ok := r.Best(); ok {
		fmt.Fprintf(&b, "\nBest: %.0f records/s (%d nodes, batches of %d) at %.4f CPU-s per 1,000 records (targets: ≥ 50,000/s, ≤ 0.02).\n",
			best.RecordsPerSec, best.Nodes, best.BatchSize, best.CPUPer1000())
	}
	if len(r.TableSize) > 0 {
		fmt.Fprintf(&b, "\n## Table size\n\nThe same scenario on empty records and on records filled with %d first (one INSERT … SELECT "+
			"into today's partition, records shaped as the nodes', then VACUUM ANALYZE and a CHECKPOINT, none of it measured), back to back.\n\n", r.SizeFill)
		b.WriteString("| nodes | batch | records at start | records/s | CPU-s/1k CP | CPU-s/1k PG | CPU-s/1k both | PG vacuum after | both + vacuum | vs empty: both / both + vacuum | batch p99 ms | others' CPU % | load (1 5 15) |\n")
		b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|\n")
		var empty Result
		for _, x := range r.TableSize {
			vs := "—"
			if x.StartRecords == 0 {
				empty = x
			} else if empty.Nodes == x.Nodes && empty.BatchSize == x.BatchSize && empty.CPUPer1000() > 0 {
				vs = fmt.Sprintf("%+.0f %% / %+.0f %%", 100*(x.CPUPer1000()/empty.CPUPer1000()-1),
					100*((x.CPUPer1000()+x.VacuumPGPer1000)/(empty.CPUPer1000()+empty.VacuumPGPer1000)-1))
			}
			fmt.Fprintf(&b, "| %d | %d | %d | %.0f | %.4f | %.4f | %.4f | %.4f | %.4f | %s | %.1f | %.0f | %s |\n",
				x.Nodes, x.BatchSize, x.StartRecords, x.RecordsPerSec, x.CPPer1000, x.PGPer1000, x.CPUPer1000(),
				x.VacuumPGPer1000, x.CPUPer1000()+x.VacuumPGPer1000, vs, x.P99MS, x.OthersBusyPct, x.LoadAfter)
		}
	}
	if x := r.Retention; x != nil {
		fmt.Fprintf(&b, "\nRetention (the retention job's deletes in batches of 1,000, then VACUUM): %d records deleted at %.0f/s; "+
			"Postgres %.4f CPU-s per 1,000 to delete and %.4f to vacuum. Dropping the day partitions holding the other %d records (%d days): "+
			"%.1f ms, Postgres %.5f CPU-s per 1,000.\n", x.Deleted, x.DeletedPerSecond, x.DeletePGPer1000, x.VacuumPGPer1000,
			x.Dropped, x.DroppedDays, x.DropMS, x.DropPGPer1000)
	}
	return b.String()
}

// SVG plots records/s (left) and CPU-s per 1,000 records of both processes (right)
// against batch size (log scale), one line per node count.
func (r *Report) SVG() string {
	const panelW, panelH, pad = 480, 340, 60
	byNodes := map[int][]Result{}
	var nodes []int
	for _, x := range r.Results {
		if _, ok := byNodes[x.Nodes]; !ok {
			nodes = append(nodes, x.Nodes)
		}
		byNodes[x.Nodes] = append(byNodes[x.Nodes], x)
	}
	sort.Ints(nodes)
	for _, n := range nodes {
		sort.Slice(byNodes[n], func(i, j int) bool { return byNodes[n][i].BatchSize < byNodes[n][j].BatchSize })
	}
	colors := []string{"#3366cc", "#229944", "#d63a2f", "#aa6600", "#7744aa", "#118888"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n",
		2*panelW, panelH+50)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	panels := []struct {
		title string
		value func(Result) float64
	}{
		{"records ingested per second", func(x Result) float64 { return x.RecordsPerSec }},
		{"CPU-s per 1,000 records (control plane + Postgres)", Result.CPUPer1000},
	}
	minB, maxB := 0, 0
	for _, x := range r.Results {
		if minB == 0 || x.BatchSize < minB {
			minB = x.BatchSize
		}
		maxB = max(maxB, x.BatchSize)
	}
	if maxB <= minB {
		maxB = minB * 10
	}
	if minB == 0 {
		minB, maxB = 1, 10
	}
	for pi, p := range panels {
		x0 := pi*panelW + pad
		w, h := panelW-pad-20, panelH-pad
		top := 30
		maxV := 0.0
		for _, x := range r.Results {
			maxV = max(maxV, p.value(x))
		}
		if maxV == 0 {
			maxV = 1
		}
		maxV *= 1.1
		fmt.Fprintf(&b, `<text x="%d" y="18" font-weight="bold">%s</text>`+"\n", x0, p.title)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>`+"\n", x0, top, w, h)
		px := func(batch int) float64 {
			return float64(x0) + float64(w)*logFrac(float64(batch), float64(minB), float64(maxB))
		}
		py := func(v float64) float64 { return float64(top+h) - float64(h)*v/maxV }
		for i := 0; i <= 4; i++ {
			v := maxV * float64(i) / 4
			fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end">%s</text>`+"\n", x0-4, py(v)+4, tick(v))
		}
		for _, bs := range batchSizes(r.Results) {
			fmt.Fprintf(&b, `<text x="%.0f" y="%d" text-anchor="middle">%d</text>`+"\n", px(bs), top+h+16, bs)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">records per batch</text>`+"\n", x0+w/2, top+h+34)
		for ni, n := range nodes {
			c := colors[ni%len(colors)]
			var pts []string
			for _, x := range byNodes[n] {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(x.BatchSize), py(p.value(x))))
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(x.BatchSize), py(p.value(x)), c)
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), c)
			if pi == 0 {
				fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">%d node(s)</text>`+"\n", x0+8, top+16+14*ni, c, n)
			}
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func batchSizes(rs []Result) []int {
	seen := map[int]bool{}
	var out []int
	for _, x := range rs {
		if !seen[x.BatchSize] {
			seen[x.BatchSize] = true
			out = append(out, x.BatchSize)
		}
	}
	sort.Ints(out)
	return out
}

// logFrac is where v lies between lo and hi on a log scale, 0 to 1.
func logFrac(v, lo, hi float64) float64 {
	if v <= lo {
		return 0
	}
	l, h := math.Log10(lo), math.Log10(hi)
	return (math.Log10(v) - l) / (h - l)
}

func tick(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.0fk", v/1000)
	case v >= 10:
		return fmt.Sprintf("%.0f", v)
	case v >= 0.1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}
