package api_test

import (
	"context"
	"crypto/ed25519"
	"strconv"
	"strings"
	"testing"

	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/snapshot"
)

// TestNodeProtocolVersion: a node states its internal protocol version on every request and
// the control plane answers with its own; a node outside the versions this control plane
// serves is refused with 426 and told which side to upgrade.
func TestNodeProtocolVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path := "/internal/v1/snapshot?have=0&hash=" + strings.Repeat("0", 64) + "&issued=0"
	for _, tc := range []struct {
		name    string
		version string // "" sends no header
		status  int
		code    string
		advice  string
	}{
		{"no header: the version before the header", "", 200, "", ""},
		{"this build's version", strconv.Itoa(internalapi.ProtocolVersion), 200, "", ""},
		{"a newer node", strconv.Itoa(internalapi.ProtocolVersion + 1), 426, "protocol_unsupported", "Upgrade the control plane first"},
		{"an older node than supported", strconv.Itoa(internalapi.MinProtocolVersion - 1), 400, "", ""},
		{"not a number", "two", 400, "", ""},
	} {
		hdr := map[string]string{internalapi.HeaderNodeID: "node-a"}
		if tc.version != "" {
			hdr[internalapi.HeaderProtocol] = tc.version
		}
		r := e.do("GET", path, nodeToken, nil, hdr)
		if r.status != tc.status {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, r.status, tc.status, r.body)
			continue
		}
		if got := r.header.Get(internalapi.HeaderProtocol); got != strconv.Itoa(internalapi.ProtocolVersion) {
			t.Errorf("%s: control plane's %s %q", tc.name, internalapi.HeaderProtocol, got)
		}
		if tc.code != "" {
			if _, code, _ := r.errInfo(t); code != tc.code || !strings.Contains(string(r.body), tc.advice) {
				t.Errorf("%s: code %q body %s", tc.name, code, r.body)
			}
		}
	}
}

// TestSnapshotRevokedKeysByProtocol: a node of this build's protocol is sent the revoked
// keys; a node of protocol 1 (or one stating none) a snapshot without them.
func TestSnapshotRevokedKeysByProtocol(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	a, err := e.store.CreateAccount(ctx, "Revoker AB", "se")
	if err != nil {
		t.Fatal(err)
	}
	k, _, err := e.store.CreateKey(ctx, a.ID, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.pub.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	path := "/internal/v1/snapshot?have=0&hash=" + strings.Repeat("0", 64) + "&issued=0"
	for _, version := range []string{"", "1", strconv.Itoa(internalapi.ProtocolVersion)} {
		hdr := map[string]string{internalapi.HeaderNodeID: "node-a"}
		if version != "" {
			hdr[internalapi.HeaderProtocol] = version
		}
		r := e.do("GET", path, nodeToken, nil, hdr)
		var s snapshot.Snapshot
		r.json(t, &s)
		if err := s.VerifySigned(signingKey.Public().(ed25519.PublicKey)); err != nil {
			t.Errorf("protocol %q: %v", version, err)
		}
		old := version == "" || version == "1"
		if got := len(s.Revoked) == 1 && s.Revoked[0].ID == k.ID; got == old {
			t.Errorf("protocol %q: revoked keys %+v", version, s.Revoked)
		}
	}
}
