package routecheck

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/snapshot"
)

func TestCheckerFindsAndHealsRouteProblems(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" && r.Header.Get("Authorization") != "Bearer right" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Write([]byte(`{"data":[]}`))
	}))
	defer ok.Close()
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler()) // a certificate the node does not trust
	defer tlsSrv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/v1"
	ln.Close()

	dir := t.TempDir()
	file := filepath.Join(dir, "credentials.env")
	write := func(body string) {
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("# route credentials\nGATEWAY_CREDENTIAL_WRONG=nope\n")
	env := map[string]string{"GATEWAY_CREDENTIAL_ENV": "right"}
	creds, err := NewCredentials(file, func(k string) string { return env[k] }, func() []string { return []string{"GATEWAY_CREDENTIAL_ENV=right", "HOME=/root"} })
	if err != nil {
		t.Fatal(err)
	}
	routes := []snapshot.Route{
		{ID: "fine", BaseURL: ok.URL + "/v1"},
		{ID: "fine-env-credential", BaseURL: ok.URL + "/v1", CredentialsRef: "env:GATEWAY_CREDENTIAL_ENV"},
		{ID: "missing", BaseURL: ok.URL + "/v1", CredentialsRef: "env:GATEWAY_CREDENTIAL_LATER"},
		{ID: "refused", BaseURL: ok.URL + "/v1", CredentialsRef: "env:GATEWAY_CREDENTIAL_WRONG"},
		{ID: "down", BaseURL: closed},
		{ID: "bad-cert", BaseURL: tlsSrv.URL + "/v1"},
	}
	changes, refreshes := 0, 0
	c := New(Config{Routes: func() []snapshot.Route { return routes }, Credentials: creds,
		OnProblemsChanged: func() { changes++ }, OnCredentialsChanged: func() { refreshes++ }})
	c.CheckNow(context.Background())
	want := map[string]string{"missing": internalapi.ProblemCredentialMissing, "refused": internalapi.ProblemUnauthorized,
		"down": internalapi.ProblemUnreachable, "bad-cert": internalapi.ProblemTLS}
	got := c.Problems()
	if len(got) != len(want) {
		t.Errorf("problems %v, want %v", got, want)
	}
	for id, p := range want {
		if got[id] != p {
			t.Errorf("%s: %q, want %q", id, got[id], p)
		}
	}
	if changes != 1 || refreshes != 0 {
		t.Errorf("changes %d refreshes %d", changes, refreshes)
	}
	c.CheckNow(context.Background()) // nothing changed: no new report
	if changes != 1 {
		t.Errorf("an unchanged check reported a change")
	}
	if names := creds.Names(); len(names) != 2 || names[0] != "GATEWAY_CREDENTIAL_ENV" || names[1] != "GATEWAY_CREDENTIAL_WRONG" {
		t.Errorf("names %v", names)
	}

	// The operator adds the missing credential and fixes the wrong one: no restart.
	write("GATEWAY_CREDENTIAL_WRONG=right\nGATEWAY_CREDENTIAL_LATER=right\n")
	c.CheckNow(context.Background())
	got = c.Problems()
	if got["missing"] != "" || got["refused"] != "" || got["down"] == "" || refreshes != 1 || changes != 2 {
		t.Errorf("after the fix: %v (refreshes %d, changes %d)", got, refreshes, changes)
	}
	if creds.Get("GATEWAY_CREDENTIAL_LATER") != "right" {
		t.Error("file credential not read")
	}
}

func TestCredentialsFileRefusesOtherVariables(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.env")
	if err := os.WriteFile(file, []byte("GATEWAY_NODE_TOKEN=x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewCredentials(file, nil, nil); err == nil {
		t.Fatal("a file naming a variable other than GATEWAY_CREDENTIAL_* was accepted")
	}
}
