package benchrouting

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// samplesHeader is the columns of a run's samples file: one row per request, in arrival
// order. counted is 0 for the warm-up's requests; replica is -1 when unknown, and ttft_ms
// and e2e_ms are empty for requests that were not answered.
var samplesHeader = []string{"at_ms", "tenant", "status", "replica", "ttft_ms", "e2e_ms", "counted"}

// writeSamples writes the requests of one run (workload w, policy p) as
// DIR/samples[-Nnodes]/<workload>-<policy>.csv, to see when in a run the slow ones came.
func writeSamples(dir string, nodes int, w *Workload, p Policy, samples []sample) error {
	sub := filepath.Join(dir, "samples"+suffix(nodes))
	if err := os.MkdirAll(sub, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(sub, fmt.Sprintf("%s-%s.csv", w.Name, p.Key())))
	if err != nil {
		return err
	}
	cw := csv.NewWriter(f)
	_ = cw.Write(samplesHeader)
	for _, s := range samples {
		ttft, e2e := "", ""
		if s.ttft > 0 {
			ttft, e2e = strconv.FormatFloat(ms(s.ttft), 'f', 1, 64), strconv.FormatFloat(ms(s.e2e), 'f', 1, 64)
		}
		counted := "1"
		if s.warmup {
			counted = "0"
		}
		_ = cw.Write([]string{strconv.FormatFloat(ms(s.at), 'f', 1, 64), strconv.Itoa(s.tenant), strconv.Itoa(s.status),
			strconv.Itoa(s.replica), ttft, e2e, counted})
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
