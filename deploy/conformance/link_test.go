package conformance

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sekgate/gateway/shared/apikey"
	"github.com/sekgate/gateway/shared/snapshot"
)

// rawGet sends GET url with a bearer token and returns the status and body.
func rawGet(t *testing.T, url, token string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// The admin API answers only on the control plane's admin listener: the admin token on the
// node-facing listener, or on the public data plane, gets 404.
func TestPlaneLinkAdminOnlyOnAdminListener(t *testing.T) {
	s := getStack(t)
	for _, base := range []string{s.CPURL, s.DataURL} {
		for _, p := range []string{"/admin/v1/accounts", "/admin/v1/snapshot", "/admin/v1/nodes"} {
			st, body := rawGet(t, base+p, s.AdminToken)
			if st != 404 || !strings.Contains(string(body), `"endpoint_not_found"`) {
				t.Errorf("GET %s%s with the admin token: %d %s, want 404 endpoint_not_found", base, p, st, body)
			}
		}
	}
	if st, body := rawGet(t, s.AdminURL+"/admin/v1/snapshot", s.AdminToken); st != 200 {
		t.Fatalf("admin listener: %d %s", st, body)
	}
}

// A node restarted while the control plane is unreachable serves its disk snapshot only when
// it verifies and is young enough: a forged key with a recomputed hash, a truncated file or
// an old snapshot leave the real binary not-ready (503), with a log line saying why.
func TestPlaneLinkDiskSnapshotChecks(t *testing.T) {
	s := getStack(t)
	a := s.NewAccount(t, "se", 10)
	// The node saves a snapshot just after swapping it in: wait for the file with the key.
	var genuine []byte
	s.waitFor(t, "disk snapshot with the new key", func() bool {
		var err error
		genuine, err = os.ReadFile(filepath.Join(s.dir, "node", "snapshot.json"))
		return err == nil && strings.Contains(string(genuine), a.KeyID)
	})
	var snap snapshot.Snapshot
	if err := json.Unmarshal(genuine, &snap); err != nil {
		t.Fatal(err)
	}
	if err := snap.Verify(); err != nil || snap.Signature == "" {
		t.Fatalf("the shared node's disk snapshot: %v (signature %q)", err, snap.Signature)
	}
	// Forged: a key of the attacker's, hash recomputed (the signing key is not at hand).
	keyID, secret, hash, _ := apikey.New()
	forgedSnap := snap
	forgedSnap.Keys = append(append([]snapshot.Key{}, snap.Keys...), snapshot.Key{ID: keyID, AccountID: a.ID, Hash: hash})
	forgedSnap.Hash, _ = snapshot.ComputeHash(&forgedSnap.Content)
	forged, _ := json.Marshal(&forgedSnap)

	dead, _ := freeAddr() // the control plane is unreachable
	for _, tc := range []struct {
		name   string
		file   []byte
		flags  []string
		key    string
		status int
		log    string
	}{
		{"genuine", genuine, nil, a.Key, 200, "serving last-known-good snapshot from disk"},
		{"forged key", forged, nil, secret, 503, "does not verify"},
		{"forged file, genuine key", forged, nil, a.Key, 503, "does not verify"},
		{"truncated", genuine[:len(genuine)/2], nil, a.Key, 503, "truncated or malformed"},
		{"older than max age", genuine, []string{"--snapshot-max-age", "1ms"}, a.Key, 503, "older than --snapshot-max-age"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "disk-" + strings.ReplaceAll(tc.name, " ", "-")
			dir := filepath.Join(s.dir, name)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "snapshot.json"), tc.file, 0o600); err != nil {
				t.Fatal(err)
			}
			n := startNode(t, s, name, append([]string{"--control-plane-url", "http://" + dead}, tc.flags...)...)
			st, body := rawGet(t, n.URL+"/v1/models", tc.key)
			if st != tc.status {
				t.Fatalf("GET /v1/models: %d %s, want %d", st, body, tc.status)
			}
			if tc.status == 503 && !strings.Contains(string(body), `"not_ready"`) {
				t.Fatalf("503 without not_ready: %s", body)
			}
			logs, _ := os.ReadFile(filepath.Join(s.dir, name+".log"))
			if !strings.Contains(string(logs), tc.log) {
				t.Fatalf("log lacks %q:\n%s", tc.log, logs)
			}
		})
	}
}
