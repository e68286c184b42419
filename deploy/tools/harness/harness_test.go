package harness

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sekgate/gateway/controlplane/catalog"
	"github.com/sekgate/gateway/shared/snapshot"
)

func TestArgsLeaveOutEmptyFields(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  []string
		want []string
	}{
		{"control plane, all", ControlPlane{Listen: "a:1", AdminListen: "a:2", DatabaseURL: "rt", MigrateDatabaseURL: "own",
			AdminToken: "adm", NodeTokens: "nt", SigningKeyFile: "k.pem", LogLevel: "warn", OpsListen: "a:6"}.Args("--x", "1"),
			[]string{"--listen", "a:1", "--admin-listen", "a:2", "--database-url", "rt", "--migrate-database-url", "own",
				"--admin-token", "adm", "--node-tokens", "nt", "--snapshot-signing-key-file", "k.pem", "--log-level", "warn",
				"--ops-listen", "a:6", "--x", "1"}},
		{"control plane, secrets from the environment", ControlPlane{Listen: "a:1", AdminListen: "a:2", SigningKeyFile: "k.pem"}.Args(),
			[]string{"--listen", "a:1", "--admin-listen", "a:2", "--snapshot-signing-key-file", "k.pem"}},
		{"data plane, all", DataPlane{Listen: "a:3", ControlPlaneURL: "http://a:1", NodeToken: "nt", PublicKeyFile: "k.pub",
			NodeID: "n1", DataDir: "d", LogLevel: "warn"}.Args(),
			[]string{"--listen", "a:3", "--control-plane-url", "http://a:1", "--node-token", "nt", "--snapshot-public-key-file", "k.pub",
				"--node-id", "n1", "--data-dir", "d", "--log-level", "warn"}},
		{"data plane, token from the environment", DataPlane{Listen: "a:3", NodeID: "n1"}.Args("--ops-listen", "a:4"),
			[]string{"--listen", "a:3", "--node-id", "n1", "--ops-listen", "a:4"}},
		{"simulator", SimulatorArgs("a:5", "sim", "--fail-after-events", "2"),
			[]string{"--listen", "a:5", "--name", "sim", "--latency-ms", "0", "--ttft-ms", "0", "--tokens-per-second", "0",
				"--error-rate", "0", "--status", "0", "--fail-after-events", "2"}},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestSigningKeysAndTokens(t *testing.T) {
	priv, pub, err := WriteSigningKeys(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pk, err := snapshot.ReadPrivateKeyFile(priv)
	if err != nil {
		t.Fatal(err)
	}
	pubk, err := snapshot.ReadPublicKeyFile(pub)
	if err != nil {
		t.Fatal(err)
	}
	if !pubk.Equal(pk.Public().(ed25519.PublicKey)) {
		t.Fatal("public key file does not match the private key")
	}
	a, b := Token("adm_"), Token("adm_")
	if a == b || !regexp.MustCompile(`^adm_[0-9a-f]{32}$`).MatchString(a) {
		t.Fatalf("tokens %q %q", a, b)
	}
}

// fakeAdmin answers the admin API calls NewAccount makes, and 400 to a bad catalogue.
func fakeAdmin(t *testing.T, token string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(401)
			return
		}
		var in map[string]any
		_ = json.NewDecoder(r.Body).Decode(&in)
		switch {
		case r.URL.Path == "/admin/v1/catalog":
			if _, ok := in["models"]; !ok {
				w.WriteHeader(400)
				w.Write([]byte(`{"error":{"message":"no models"}}`))
			}
		case r.URL.Path == "/admin/v1/accounts":
			w.Write([]byte(`{"id":"acct_1"}`))
		case strings.HasSuffix(r.URL.Path, "/credits"):
			if in["amount_sek"] != "10.00" {
				w.WriteHeader(400)
			}
		case strings.HasSuffix(r.URL.Path, "/models"):
		case strings.HasSuffix(r.URL.Path, "/keys"):
			if in["name"] == "nosecret" {
				w.Write([]byte(`{}`))
				return
			}
			w.Write([]byte(`{"secret":"sk_1"}`))
		default:
			w.WriteHeader(404)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestAdmin(t *testing.T) {
	ctx := context.Background()
	srv := fakeAdmin(t, "adm_x")
	a := Admin{URL: srv.URL, Token: "adm_x"}
	if err := a.LoadCatalog(ctx, Catalog(SimModel{ID: "m", RouteID: "r", Upstream: "127.0.0.1:1"})); err != nil {
		t.Fatal(err)
	}
	if err := a.LoadCatalog(ctx, map[string]any{}); err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("bad catalogue: %v", err)
	}
	sp := AccountSpec{Customer: "C AB", Residency: "se", CreditSEK: "10.00", Models: []string{"m"}, KeyName: "k"}
	acct, err := a.NewAccount(ctx, sp)
	if err != nil || acct != (Account{ID: "acct_1", Key: "sk_1"}) {
		t.Fatalf("NewAccount: %+v %v", acct, err)
	}
	sp.KeyName = "nosecret"
	if _, err := a.NewAccount(ctx, sp); err == nil {
		t.Fatal("a key answer without a secret accepted")
	}
	sp.KeyName, sp.CreditSEK = "k", "1.00"
	if _, err := a.NewAccount(ctx, sp); err == nil {
		t.Fatal("a refused credit accepted")
	}
	if r, err := (Admin{URL: srv.URL, Token: "wrong"}).Do(ctx, "GET", "/admin/v1/models", nil); err != nil || r.Status != 401 {
		t.Fatalf("wrong token: %d %v", r.Status, err)
	}
}

// The catalogue document is one the control plane accepts as it is (unknown fields are
// refused, every value validated).
func TestCatalogAcceptedByControlPlane(t *testing.T) {
	cat := Catalog(SimModel{ID: "a", RouteID: "a-r", Upstream: "127.0.0.1:1", InOre: 2000, OutOre: 6000, ContextTokens: 32768,
		IdleTimeoutMS: 10000, TotalTimeoutMS: 60000},
		SimModel{ID: "b", RouteID: "b-r", Upstream: "127.0.0.1:2", InOre: 1, OutOre: 1, ContextTokens: 131072, MaxConns: 20000,
			IdleTimeoutMS: 120000, TotalTimeoutMS: 900000})
	b, err := json.Marshal(cat)
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.DecodeJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if strings.Count(string(b), `"max_conns"`) != 1 || !strings.Contains(string(b), `"base_url":"http://127.0.0.1:2/v1"`) {
		t.Fatalf("catalogue %s", b)
	}
}

func TestStartPostgres(t *testing.T) {
	ctx := context.Background()
	c, owner, runtime, err := StartPostgres(ctx, "harness")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()
	users := map[string]bool{}
	for _, u := range []string{owner, runtime} {
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		var who string
		err = conn.QueryRow(ctx, "SELECT current_user").Scan(&who)
		conn.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		users[who] = true
	}
	if len(users) != 2 {
		t.Fatalf("owner and runtime URLs connect as the same role: %v", users)
	}
}
