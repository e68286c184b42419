package benchrun

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/deploy/tools/proc"
)

func TestParseStatus(t *testing.T) {
	m, err := proc.ParseStatus([]byte("Name:\tdataplane\nVmPeak:\t  900 kB\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS != 1<<20 || m.Peak != 2<<20 {
		t.Fatalf("%+v", m)
	}
	if _, err := proc.ParseStatus([]byte("VmRSS:\t1 kB\n")); err == nil {
		t.Error("missing VmHWM: want error")
	}
}

func TestOwnProcessMeter(t *testing.T) {
	m, err := StartMeter(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(60 * time.Millisecond)
	for x := 0; time.Now().Before(end); x++ {
		_ = x * x
	}
	u, err := m.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if u.RSS <= 0 || u.PeakRSS < u.RSS || u.CPUSeconds < 0 {
		t.Fatalf("%+v", u)
	}
}

func TestQuantiles(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	q := Quantiles(d, 0.5, 0.9, 0.99, 1)
	want := []float64{50, 90, 99, 100}
	for i := range q {
		if q[i] != want[i] {
			t.Fatalf("quantiles %v, want %v", q, want)
		}
	}
	if q := Quantiles(nil, 0.5); q[0] != 0 {
		t.Fatalf("empty: %v", q)
	}
}

func TestChatBody(t *testing.T) {
	for _, n := range []int{1 << 10, 64 << 10, 333} {
		b := ChatBody(n)
		if len(b) != n {
			t.Errorf("ChatBody(%d) is %d bytes", n, len(b))
		}
		var v struct {
			Model    string `json:"model"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(b, &v); err != nil || v.Model != Model || len(v.Messages) != 1 {
			t.Errorf("ChatBody(%d) = %.80s…: %v", n, b, err)
		}
	}
}

func TestSustained(t *testing.T) {
	ok := FixedResult{Rate: 1000, SentRate: 999, Throughput: 990, ErrorPct: 0.5, P99: 3}
	if !ok.Sustained() {
		t.Error("ok result not sustained")
	}
	for name, f := range map[string]func(*FixedResult){
		"errors":      func(r *FixedResult) { r.ErrorPct = 1 },
		"slow sender": func(r *FixedResult) { r.SentRate = 900 },
		"few answers": func(r *FixedResult) { r.Throughput = 900 },
		"queueing":    func(r *FixedResult) { r.P99 = 150 },
	} {
		r := ok
		f(&r)
		if r.Sustained() {
			t.Errorf("%s: sustained", name)
		}
	}
}

func sampleReport() *Report {
	rs := []FixedResult{
		{Target: Direct, Body: "1KiB", Rate: 2000, SentRate: 2000, Throughput: 2000, P50: 0.3, P99: 1, CPUPer1k: 0.1},
		{Target: Bare, Body: "1KiB", Rate: 2000, SentRate: 2000, Throughput: 2000, P50: 0.4, P99: 1.2, CPUPer1k: 0.08},
		{Target: Dataplane, Body: "1KiB", Rate: 2000, SentRate: 2000, Throughput: 2000, P50: 0.45, P99: 1.6, CPUPer1k: 0.1},
		{Target: Dataplane, Body: "1KiB", Rate: 5000, SentRate: 5000, Throughput: 4000, ErrorPct: 20, P50: 9, P99: 300, CPUPer1k: 0.1},
		{Target: DataplaneAlone, Body: "1KiB", Rate: 2000, SentRate: 2000, Throughput: 2000, P50: 0.42, P99: 1.3, CPUPer1k: 0.096},
	}
	compare(rs)
	return &Report{Mode: "test", Fixed: rs, Streaming: []StreamResult{}}
}

func TestCompareAndEvaluate(t *testing.T) {
	r := sampleReport()
	dp := r.fixed(Dataplane, "1KiB", 2000)
	if dp.AddedP50Bare == nil || *dp.AddedP50Bare < 0.049 || *dp.AddedP50Bare > 0.051 {
		t.Fatalf("added over bare: %v", dp.AddedP50Bare)
	}
	if dp.CPURatioBare == nil || *dp.CPURatioBare != 1.25 {
		t.Fatalf("cpu ratio: %v", dp.CPURatioBare)
	}
	if r.fixed(Dataplane, "1KiB", 5000).AddedP99Direct != nil {
		t.Fatal("no direct run at 5000: added must stay nil")
	}
	if good, bad := r.fixedBounds(Dataplane, "1KiB"); good != 2000 || bad != 5000 {
		t.Fatalf("bounds %d %d", good, bad)
	}
	r.evaluate()
	var met, missed int
	for _, c := range r.Checks {
		if c.Met != nil && *c.Met {
			met++
		} else if c.Met != nil {
			missed++
		}
	}
	if met != 4 { // the three 2,000/s checks and the data plane alone's
		t.Fatalf("checks %+v", r.Checks)
	}
	var alone *Check
	for i := range r.Checks {
		if strings.Contains(r.Checks[i].Target, "data plane alone") {
			alone = &r.Checks[i]
		}
	}
	if alone == nil || alone.Met == nil || !*alone.Met || !strings.Contains(alone.Got, "+0.300 ms (with them ingesting +0.600 ms); CPU 1.20×") {
		t.Fatalf("data plane alone: %+v", alone)
	}
	md := r.Markdown()
	for _, want := range []string{"## Targets", "| 2000 | dataplane |", "+0.050", "1.25"} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
}

func TestPlotIsPNG(t *testing.T) {
	var buf bytes.Buffer
	if err := sampleReport().Plot(&buf); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 300 {
		t.Fatalf("bounds %v", b)
	}
}
