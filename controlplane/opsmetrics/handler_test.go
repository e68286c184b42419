package opsmetrics_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sekgate/gateway/controlplane/opsmetrics"
	"github.com/sekgate/gateway/controlplane/pgtest"
	"github.com/sekgate/gateway/controlplane/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// /readyz follows the database: ready with every migration applied, not ready when the
// schema is behind the binary or Postgres is gone, and not ready once shutdown began;
// /livez answers throughout.
func TestReadiness(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(ctx, store.Config{DatabaseURL: pgtest.NewDatabase(t), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := opsmetrics.New()
	var drain opsmetrics.Drain
	srv := httptest.NewServer(m.Handler(st.Ready, &drain, log))
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	check := func(step, path string, status int, body string) {
		t.Helper()
		if st, b := get(path); st != status || !strings.Contains(b, body) {
			t.Errorf("%s: %s = %d %q, want %d with %q", step, path, st, b, status, body)
		}
	}
	check("migrated", "/readyz", 200, "ready")
	if _, err := st.Pool().Exec(ctx, `UPDATE public.schema_version SET version = version - 1`); err != nil {
		t.Fatal(err)
	}
	check("schema behind", "/readyz", 503, "migration")
	if _, err := st.Pool().Exec(ctx, `UPDATE public.schema_version SET version = version + 1`); err != nil {
		t.Fatal(err)
	}
	check("migrated again", "/readyz", 200, "ready")
	drain.Begin()
	check("draining", "/readyz", 503, "shutting down")
	check("draining", "/livez", 200, "ok")
	st.Close()
	var live opsmetrics.Drain
	srv2 := httptest.NewServer(m.Handler(st.Ready, &live, log))
	defer srv2.Close()
	res, err := http.Get(srv2.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 503 {
		t.Errorf("pool closed: /readyz %d, want 503", res.StatusCode)
	}
}

// The ops listener serves the Go profiler: the index, a CPU profile (gzip-compressed
// protobuf) and the heap profile.
func TestProfiler(t *testing.T) {
	m := opsmetrics.New()
	srv := httptest.NewServer(m.Handler(func(context.Context) error { return nil }, nil, slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer srv.Close()
	for _, tc := range []struct{ path, want string }{
		{"/debug/pprof/", "Types of profiles available"},
		{"/debug/pprof/profile?seconds=1", "\x1f\x8b"},
		{"/debug/pprof/heap", "\x1f\x8b"},
	} {
		res, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: %d, %d bytes starting %q; want 200 holding %q", tc.path, res.StatusCode, len(b), b[:min(len(b), 40)], tc.want)
		}
	}
}
