package syncclient

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/snapshot"
)

// builtFor returns a genuine (signed) snapshot the control plane filtered for country.
func builtFor(t *testing.T, version int64, country string) *snapshot.Snapshot {
	t.Helper()
	s, _ := fixture.Snapshot(version, "http://up/v1", time.Now())
	s.Country = country
	h, err := snapshot.ComputeHash(&s.Content)
	if err != nil {
		t.Fatal(err)
	}
	s.Hash = h
	s.Sign(fixture.SigningKey)
	return s
}

func TestSnapshotForAnotherCountryRefused(t *testing.T) {
	cp := newFakeCP(builtFor(t, 1, "US"))
	var mu sync.Mutex
	var countries, regions, ages []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		countries = append(countries, r.URL.Query().Get("country"))
		regions = append(regions, r.URL.Query().Get("region"))
		ages = append(ages, r.Header.Get(internalapi.HeaderSpoolAge))
		mu.Unlock()
		cp.ServeHTTP(w, r)
	}))
	defer srv.Close()
	var st index.Store
	dir := t.TempDir()
	c, logs := loggedClient(t, srv.URL, dir, &st, nil)
	c.cfg.Country, c.cfg.Region = "US", "us-any"
	c.cfg.SpoolAge = func() time.Duration { return 2500 * time.Millisecond }
	if err := c.Poll(context.Background()); err != nil || st.Load().Version() != 1 {
		t.Fatalf("snapshot built for the node's country: %v", err)
	}
	for _, tc := range []struct {
		name    string
		version int64
		country string
	}{{"another country", 2, "SE"}, {"unfiltered", 3, ""}, {"lower case", 4, "us"}} {
		cp.set(builtFor(t, tc.version, tc.country))
		if err := c.Poll(context.Background()); !errors.Is(err, ErrCountry) {
			t.Fatalf("%s: err %v, want ErrCountry", tc.name, err)
		}
		if v := st.Load().Version(); v != 1 {
			t.Fatalf("%s: installed version %d, want 1 kept", tc.name, v)
		}
	}
	if !strings.Contains(logs.String(), "refusing snapshot from the control plane") || !strings.Contains(logs.String(), "another country") {
		t.Fatalf("no log line: %s", logs)
	}
	mu.Lock()
	for i, got := range countries {
		if got != "US" || regions[i] != "us-any" || ages[i] != "2500" {
			t.Fatalf("poll %d sent country %q, region %q, spool age %q; want US, us-any, 2500", i, got, regions[i], ages[i])
		}
	}
	mu.Unlock()

	// The US snapshot on disk is refused by a node started for another country, and by
	// one started without a country.
	for _, country := range []string{"SE", ""} {
		var st2 index.Store
		c2, _ := loggedClient(t, srv.URL, dir, &st2, nil)
		c2.cfg.Country = country
		if _, err := c2.LoadDisk(); !errors.Is(err, ErrCountry) || st2.Load() != nil {
			t.Fatalf("disk snapshot for US at a node for %q: err %v", country, err)
		}
	}
}
