package opsapi

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

type fakeSnapshots struct {
	v  int64
	ok bool
}

func (f *fakeSnapshots) Version() (int64, bool) { return f.v, f.ok }

func TestHandler(t *testing.T) {
	reg := prometheus.NewRegistry()
	extra := prometheus.NewCounter(prometheus.CounterOpts{Name: "gateway_spool_records_test", Help: "test"})
	extra.Add(3)
	reg.MustRegister(extra)

	snaps := &fakeSnapshots{}
	drain := &Drain{}
	h := Handler(reg, snaps, drain, nil)
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		b, _ := io.ReadAll(rec.Body)
		return rec.Code, string(b)
	}
	if code, _ := get("/readyz"); code != 503 {
		t.Fatalf("readyz without snapshot: %d", code)
	}
	if code, body := get("/livez"); code != 200 || body != "ok" {
		t.Fatalf("livez without snapshot: %d %q", code, body)
	}
	snaps.v, snaps.ok = 7, true
	if code, body := get("/readyz"); code != 200 || body != "ready" {
		t.Fatalf("readyz: %d %q", code, body)
	}
	code, body := get("/metrics")
	for _, want := range []string{"gateway_ready 1", "gateway_spool_records_test 3"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("metrics lack %q (status %d)", want, code)
		}
	}
	drain.Begin()
	if code, body := get("/readyz"); code != 503 || body != "shutting down" {
		t.Errorf("readyz while draining: %d %q", code, body)
	}
	if code, _ := get("/livez"); code != 200 {
		t.Errorf("livez while draining: %d", code)
	}
	if _, body := get("/metrics"); !strings.Contains(body, "gateway_ready 0") {
		t.Error("gateway_ready is not 0 while draining")
	}
	if code, _ := get("/nope"); code != 404 {
		t.Errorf("unknown path: %d", code)
	}
}
