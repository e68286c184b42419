package harness

import (
	"context"
	"net/http"
	"time"

	"github.com/sekgate/gateway/deploy/tools/proc"
)

// Plane is a started control plane: its process (the node listener), the admin API's
// client, the token nodes present, the public key file nodes verify snapshots with and the
// base URL of its ops listener (metrics, probes, /debug/pprof/).
type Plane struct {
	Proc          *proc.Proc
	Admin         Admin
	NodeToken     string
	PublicKeyFile string
	OpsURL        string
}

// StartControlPlane writes a fresh signing key pair into dir, starts a control plane named
// "controlplane" in g on three free loopback addresses (node, admin and ops listeners) that
// migrates as ownerURL and serves as runtimeURL, and waits up to 60 s until it serves a
// compiled snapshot. The caller stops g.
func StartControlPlane(ctx context.Context, g *proc.Group, client *http.Client, dir, ownerURL, runtimeURL string) (Plane, error) {
	keyFile, pubFile, err := WriteSigningKeys(dir)
	if err != nil {
		return Plane{}, err
	}
	listen, err := proc.FreeAddr()
	if err != nil {
		return Plane{}, err
	}
	adminListen, err := proc.FreeAddr()
	if err != nil {
		return Plane{}, err
	}
	opsListen, err := proc.FreeAddr()
	if err != nil {
		return Plane{}, err
	}
	p := Plane{Admin: Admin{URL: "http://" + adminListen, Token: Token("adm_"), Client: client},
		NodeToken: Token("node_"), PublicKeyFile: pubFile, OpsURL: "http://" + opsListen}
	if p.Proc, err = g.Start("controlplane", "controlplane", listen, ControlPlane{Listen: listen, AdminListen: adminListen,
		DatabaseURL: runtimeURL, MigrateDatabaseURL: ownerURL, AdminToken: p.Admin.Token, NodeTokens: p.NodeToken,
		SigningKeyFile: keyFile, LogLevel: "warn", OpsListen: opsListen}.Args()...); err != nil {
		return Plane{}, err
	}
	if err := WaitControlPlane(ctx, client, p.Proc, p.Admin, 60*time.Second); err != nil {
		return Plane{}, err
	}
	return p, nil
}
