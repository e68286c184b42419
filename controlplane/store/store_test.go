package store_test

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/sekgate/gateway/controlplane/catalog"
	"github.com/sekgate/gateway/controlplane/pgtest"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/controlplane/store/storetest"
	"github.com/sekgate/gateway/shared/apikey"
	"github.com/sekgate/gateway/shared/snapshot"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(discard{}, &slog.HandlerOptions{Level: slog.LevelError + 4}))
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// openStore opens the store as deployments do: migrations as the schema owner, serving
// as the runtime role.
func openStore(t *testing.T, db pgtest.Roles) *store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := store.Open(ctx, store.Config{DatabaseURL: db.RuntimeURL, MigrateDatabaseURL: db.OwnerURL, Logger: quietLogger(), MaxConns: 8})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

func newStore(t *testing.T) *store.Store {
	t.Helper()
	s, _ := storetest.Open(t, store.Config{Logger: quietLogger(), MaxConns: 8})
	return s
}

func testCatalog() *catalog.Catalog {
	c := &catalog.Catalog{Models: []catalog.Model{
		{
			Model: snapshot.Model{ID: "llama-3.1-8b", Aliases: []string{"llama", "meta/llama-small"}, Endpoint: snapshot.EndpointChat,
				Created: 1700000000, ContextTokens: 8192, Tokenizer: "llama3", InputOrePerMillion: 150, OutputOrePerMillion: 300},
			Routes: []snapshot.Route{
				{ID: "llama-se", Provider: "vllm-sto", BaseURL: "http://127.0.0.1:9/v1", Protocols: []string{snapshot.EndpointChat, snapshot.EndpointCompletions},
					Region: "se-sto-1", Country: "SE", Priority: 0, Weight: 1},
				{ID: "llama-de", Provider: "vllm-fra", BaseURL: "http://127.0.0.1:9/v1", Region: "de-fra-1", Country: "DE", Priority: 1, Weight: 2},
			},
		},
		{
			Model:  snapshot.Model{ID: "nomic-embed", Endpoint: snapshot.EndpointEmbeddings, InputOrePerMillion: 10},
			Routes: []snapshot.Route{{ID: "embed-se", Provider: "tei", BaseURL: "http://127.0.0.1:9/v1", Region: "se-sto-1", Country: "SE", Weight: 1}},
		},
	}}
	if err := c.Validate(); err != nil {
		panic(err)
	}
	return c
}

func TestMigrationsIdempotent(t *testing.T) {
	t.Parallel()
	url := pgtest.NewRoles(t)
	ctx := context.Background()
	files, err := fs.Glob(store.Migrations(), "*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no embedded migrations: %v", err)
	}
	for i := 0; i < 3; i++ { // the second and third open find nothing to do
		s := openStore(t, url)
		v, err := s.SchemaVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if int(v) != len(files) {
			t.Fatalf("open %d: schema version %d, want %d", i, v, len(files))
		}
		if _, err := s.CreateAccount(ctx, "acme", "se"); err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		accts, err := s.ListAccounts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(accts) != i+1 {
			t.Fatalf("open %d: %d accounts, data lost across restarts", i, len(accts))
		}
	}
}

func TestAccounts(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()

	a, err := s.CreateAccount(ctx, "Acme AB", "eu")
	if err != nil {
		t.Fatal(err)
	}
	if len(a.ID) != len("acct_")+16 || a.ID[:5] != "acct_" {
		t.Fatalf("bad account id %q", a.ID)
	}
	if a.Residency != "eu" || a.Suspended || a.BalanceMicroSEK != 0 || len(a.Models) != 0 {
		t.Fatalf("unexpected new account %+v", a)
	}

	for _, tc := range []struct {
		name, customer, residency string
		want                      error
	}{
		{"bad residency", "x", "us", store.ErrInvalid},
		{"empty customer", "", "se", store.ErrInvalid},
	} {
		if _, err := s.CreateAccount(ctx, tc.customer, tc.residency); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}

	if _, err := s.GetAccount(ctx, "acct_0000000000000000"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown account: %v", err)
	}

	se, yes := "se", true
	got, err := s.UpdateAccount(ctx, a.ID, store.AccountPatch{Residency: &se, Suspended: &yes, Limits: &snapshot.Limits{RequestsPerSecond: 5, Burst: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Residency != "se" || !got.Suspended || got.Limits == nil || got.Limits.Burst != 10 {
		t.Fatalf("patch not applied: %+v", got)
	}
	got, err = s.UpdateAccount(ctx, a.ID, store.AccountPatch{ClearLimits: true})
	if err != nil || got.Limits != nil || got.Residency != "se" {
		t.Fatalf("clear limits: %+v %v", got, err)
	}
	bad := "mars"
	if _, err := s.UpdateAccount(ctx, a.ID, store.AccountPatch{Residency: &bad}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("bad residency patch: %v", err)
	}
	if _, err := s.UpdateAccount(ctx, "acct_0000000000000000", store.AccountPatch{Suspended: &yes}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("patch unknown: %v", err)
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	a, _ := s.CreateAccount(ctx, "acme", "se")

	exp := time.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Second)
	k, secret, err := s.CreateKey(ctx, a.ID, "ci", &exp)
	if err != nil {
		t.Fatal(err)
	}
	if len(secret) == 0 || k.AccountID != a.ID || k.Name != "ci" || k.ExpiresAt == nil || !k.ExpiresAt.Equal(exp) {
		t.Fatalf("unexpected key %+v", k)
	}
	if _, _, err := s.CreateKey(ctx, "acct_0000000000000000", "", nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("key for unknown account: %v", err)
	}
	k2, secret2, err := s.CreateKey(ctx, a.ID, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := s.ListKeys(ctx, a.ID)
	if err != nil || len(keys) != 2 {
		t.Fatalf("list keys: %v %v", keys, err)
	}
	r, err := s.RevokeKey(ctx, k2.ID)
	if err != nil || r.RevokedAt == nil {
		t.Fatalf("revoke: %+v %v", r, err)
	}
	r2, err := s.RevokeKey(ctx, k2.ID)
	if err != nil || !r2.RevokedAt.Equal(*r.RevokedAt) {
		t.Fatalf("second revoke changed the time: %v %v", r2.RevokedAt, err)
	}
	if _, err := s.RevokeKey(ctx, "key_000000000000"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("revoke unknown: %v", err)
	}
	if _, err := s.ListKeys(ctx, "acct_0000000000000000"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("list keys of unknown account: %v", err)
	}
	// Revoked keys leave the snapshot; the secret's hash is in it for live keys.
	snap, err := s.CompileSnapshot(ctx, snapshot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Keys) != 1 || snap.Keys[0].ID != k.ID {
		t.Fatalf("snapshot keys %+v, want only %s", snap.Keys, k.ID)
	}
	// The revoked key is listed by ID, hash prefix and time only.
	want := snapshot.RevokedKey{ID: k2.ID, HashPrefix: apikey.Hash(secret2)[:8], RevokedAt: r.RevokedAt.UTC()}
	if len(snap.Revoked) != 1 || snap.Revoked[0].ID != want.ID || snap.Revoked[0].HashPrefix != want.HashPrefix ||
		!snap.Revoked[0].RevokedAt.Equal(want.RevokedAt) {
		t.Fatalf("snapshot revoked %+v, want %+v", snap.Revoked, want)
	}
}

func TestCatalog(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	nm, nr, err := s.UpsertCatalog(ctx, testCatalog())
	if err != nil || nm != 2 || nr != 3 {
		t.Fatalf("upsert: %d %d %v", nm, nr, err)
	}
	models, err := s.ListModels(ctx)
	if err != nil || len(models) != 2 {
		t.Fatalf("list: %v %v", models, err)
	}
	if models[0].ID != "llama-3.1-8b" || !slices.Equal(models[0].Aliases, []string{"llama", "meta/llama-small"}) || len(models[0].Routes) != 2 {
		t.Fatalf("model 0: %+v", models[0])
	}
	for _, name := range []string{"llama", "meta/llama-small", "llama-3.1-8b"} {
		if id, err := s.ResolveModel(ctx, name); err != nil || id != "llama-3.1-8b" {
			t.Errorf("resolve %q: %q %v", name, id, err)
		}
	}

	// A route flag reaches the stored route (and so the snapshot).
	c := testCatalog()
	c.Models[0].Routes[0].ContinuousUsageStats = true
	if _, _, err := s.UpsertCatalog(ctx, c); err != nil {
		t.Fatal(err)
	}
	if models, _ = s.ListModels(ctx); !models[0].Routes[0].ContinuousUsageStats || models[0].Routes[1].ContinuousUsageStats {
		t.Fatalf("continuous_usage_stats not stored: %+v", models[0].Routes)
	}

	// The value opt-ins reach the stored route; absent ones read back as off and nil (the
	// snapshot's form, so its hash does not change for routes without them).
	c.Models[0].Routes[0].AllowRemoteMedia = true
	c.Models[0].Routes[0].AllowExtensions = []string{"prompt_embeds", "chat_template"}
	if _, _, err := s.UpsertCatalog(ctx, c); err != nil {
		t.Fatal(err)
	}
	models, _ = s.ListModels(ctx)
	if r := models[0].Routes[0]; !r.AllowRemoteMedia || len(r.AllowExtensions) != 2 || r.AllowExtensions[1] != "chat_template" {
		t.Fatalf("opt-ins not stored: %+v", r)
	}
	if r := models[0].Routes[1]; r.AllowRemoteMedia || r.AllowExtensions != nil {
		t.Fatalf("opt-ins on a route without them: %+v", r)
	}
	c.Models[0].Routing = "affinity"
	c.Models[0].Routes[1].MetricsURL = "off"
	c.Models[0].Routes[1].Server = "vllm"
	c.Models[0].Routes[1].Discovery = snapshot.DiscoveryDNS
	c.Models[0].CacheIsolation = "shared"
	c.Models[0].OutputBytesPerToken = 5
	if _, _, err := s.UpsertCatalog(ctx, c); err != nil {
		t.Fatal(err)
	}
	models, _ = s.ListModels(ctx)
	if m := models[0]; m.Routing != "affinity" || m.Routes[1].MetricsURL != "off" || m.Routes[0].MetricsURL != "" ||
		m.Routes[1].Server != "vllm" || m.Routes[0].Server != "" || models[1].Routing != "" {
		t.Fatalf("routing, metrics_url or server not stored: %+v", models)
	}
	if models[0].OutputBytesPerToken != 5 || models[1].OutputBytesPerToken != 0 {
		t.Fatalf("output_bytes_per_token not stored: %d, %d", models[0].OutputBytesPerToken, models[1].OutputBytesPerToken)
	}
	if models[0].Routes[1].Discovery != snapshot.DiscoveryDNS || models[0].Routes[0].Discovery != "" {
		t.Fatalf("discovery not stored: %+v", models[0].Routes)
	}
	if models[0].CacheIsolation != "shared" || models[1].CacheIsolation != "" {
		t.Fatalf("cache_isolation not stored: %q, %q", models[0].CacheIsolation, models[1].CacheIsolation)
	}
	snap, err := s.CompileSnapshot(ctx, snapshot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got := snap.Models[0].CacheIsolation; got != "shared" || snap.Models[0].ID != models[0].ID {
		t.Fatalf("snapshot model %s cache_isolation %q, want shared", snap.Models[0].ID, got)
	}
	if n := slices.IndexFunc(snap.Routes, func(r snapshot.Route) bool { return r.Discovery == snapshot.DiscoveryDNS }); n < 0 {
		t.Fatalf("snapshot routes without the discovered one: %+v", snap.Routes)
	}

	// Re-upload: the alias moves to the other model, one route is dropped.
	c = testCatalog()
	c.Models[0].Aliases = []string{"meta/llama-small"}
	c.Models[1].Aliases = []string{"llama"}
	c.Models[0].Routes = c.Models[0].Routes[:1]
	if _, _, err := s.UpsertCatalog(ctx, c); err != nil {
		t.Fatal(err)
	}
	if id, _ := s.ResolveModel(ctx, "llama"); id != "nomic-embed" {
		t.Fatalf("alias did not move: %q", id)
	}
	routes, _ := s.ListRoutes(ctx)
	if len(routes) != 2 {
		t.Fatalf("routes not pruned: %+v", routes)
	}

	// Names are one namespace: an alias equal to another model's ID, or an alias of a model
	// outside the file, is a conflict.
	for _, tc := range []struct {
		name string
		cat  *catalog.Catalog
	}{
		{"alias equals existing id", &catalog.Catalog{Models: []catalog.Model{{Model: snapshot.Model{ID: "other", Aliases: []string{"nomic-embed"}, Endpoint: snapshot.EndpointChat}}}}},
		{"alias owned by model outside the file", &catalog.Catalog{Models: []catalog.Model{{Model: snapshot.Model{ID: "other", Aliases: []string{"llama"}, Endpoint: snapshot.EndpointChat}}}}},
		{"id equals existing alias", &catalog.Catalog{Models: []catalog.Model{{Model: snapshot.Model{ID: "llama", Endpoint: snapshot.EndpointChat}}}}},
	} {
		if _, _, err := s.UpsertCatalog(ctx, tc.cat); !errors.Is(err, store.ErrConflict) {
			t.Errorf("%s: %v, want conflict", tc.name, err)
		}
	}
	if models, _ := s.ListModels(ctx); len(models) != 2 {
		t.Fatalf("a failed upsert left %d models", len(models))
	}

	// Enabling models for an account resolves aliases.
	a, _ := s.CreateAccount(ctx, "acme", "any")
	ids, err := s.EnableModels(ctx, a.ID, []string{"meta/llama-small", "nomic-embed"})
	if err != nil || !slices.Equal(ids, []string{"llama-3.1-8b", "nomic-embed"}) {
		t.Fatalf("enable: %v %v", ids, err)
	}
	if _, err := s.EnableModels(ctx, a.ID, []string{"nope"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("enable unknown: %v", err)
	}
	if _, err := s.EnableModels(ctx, "acct_0000000000000000", []string{"llama"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("enable for unknown account: %v", err)
	}
	if err := s.DisableModel(ctx, a.ID, "llama"); err != nil { // alias of nomic-embed now
		t.Fatal(err)
	}
	got, _ := s.GetAccount(ctx, a.ID)
	if !slices.Equal(got.Models, []string{"llama-3.1-8b"}) {
		t.Fatalf("models after disable: %v", got.Models)
	}
	if err := s.DisableModel(ctx, a.ID, "nomic-embed"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("disable a model not enabled: %v", err)
	}
}

func TestLedgerCredits(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	a, _ := s.CreateAccount(ctx, "acme", "se")

	r1, err := s.AddCredit(ctx, store.Credit{AccountID: a.ID, AmountMicroSEK: 100_000_000, Kind: store.KindCredit, Note: "welcome"})
	if err != nil || !r1.Applied || r1.BalanceMicroSEK != 100_000_000 {
		t.Fatalf("credit: %+v %v", r1, err)
	}
	// Idempotent by reference.
	c := store.Credit{AccountID: a.ID, AmountMicroSEK: 5_000_000, Kind: store.KindTopup, Reference: "checkout:cs_1"}
	r2, err := s.AddCredit(ctx, c)
	if err != nil || !r2.Applied || r2.BalanceMicroSEK != 105_000_000 || r2.Seq <= r1.Seq {
		t.Fatalf("topup: %+v %v", r2, err)
	}
	r3, err := s.AddCredit(ctx, c)
	if err != nil || r3.Applied || r3.Entry.ID != r2.Entry.ID || r3.BalanceMicroSEK != 105_000_000 {
		t.Fatalf("repeated topup: %+v %v", r3, err)
	}
	c.AmountMicroSEK = 1
	if _, err := s.AddCredit(ctx, c); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("reference reused with another amount: %v", err)
	}
	for _, bad := range []store.Credit{
		{AccountID: a.ID, AmountMicroSEK: 0, Kind: store.KindCredit},
		{AccountID: a.ID, AmountMicroSEK: -5, Kind: store.KindCredit},
		{AccountID: a.ID, AmountMicroSEK: 5, Kind: store.KindDebit},
	} {
		if _, err := s.AddCredit(ctx, bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("credit %+v: %v, want invalid", bad, err)
		}
	}
	if _, err := s.AddCredit(ctx, store.Credit{AccountID: "acct_0000000000000000", AmountMicroSEK: 5, Kind: store.KindCredit}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("credit unknown account: %v", err)
	}
	// The ledger is append-only.
	if _, err := s.Pool().Exec(ctx, `UPDATE ledger SET amount_micro_sek = 1`); err == nil {
		t.Fatal("ledger update succeeded")
	}
	if _, err := s.Pool().Exec(ctx, `DELETE FROM ledger`); err == nil {
		t.Fatal("ledger delete succeeded")
	}
	sum, _ := s.LedgerSum(ctx, a.ID)
	bal, _ := s.Balance(ctx, a.ID)
	if sum != 105_000_000 || bal != sum {
		t.Fatalf("sum %d balance %d", sum, bal)
	}
	seq, bals, err := s.BalancesSince(ctx, r1.Seq)
	if err != nil || seq != r2.Seq || len(bals) != 1 || bals[0].MicroSEK != 105_000_000 {
		t.Fatalf("balances since: %d %+v %v", seq, bals, err)
	}
	seq, bals, _ = s.BalancesSince(ctx, seq)
	if len(bals) != 0 {
		t.Fatalf("balances since current: %d %+v", seq, bals)
	}
}

func TestSnapshotCompile(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	s1, err := s.CompileSnapshot(ctx, snapshot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if s1.Version != 1 || s1.Verify() != nil {
		t.Fatalf("first snapshot: version %d verify %v", s1.Version, s1.Verify())
	}
	s.UpsertCatalog(ctx, testCatalog())
	a, _ := s.CreateAccount(ctx, "acme", "eu")
	b, _ := s.CreateAccount(ctx, "beta", "se")
	s.EnableModels(ctx, b.ID, []string{"nomic-embed", "llama"})
	s.CreateKey(ctx, a.ID, "", nil)
	s.CreateKey(ctx, b.ID, "", nil)
	s.AddCredit(ctx, store.Credit{AccountID: a.ID, AmountMicroSEK: 1, Kind: store.KindCredit})

	s2, err := s.CompileSnapshot(ctx, snapshot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if s2.Version != 2 || s2.Hash == s1.Hash {
		t.Fatalf("change did not bump: v%d", s2.Version)
	}
	// Unchanged content keeps its version and hash, however often it is compiled.
	for i := 0; i < 3; i++ {
		s3, err := s.CompileSnapshot(ctx, snapshot.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if s3.Version != s2.Version || s3.Hash != s2.Hash || !s3.GeneratedAt.Equal(s2.GeneratedAt) {
			t.Fatalf("recompile %d: v%d %s, want v%d %s", i, s3.Version, s3.Hash, s2.Version, s2.Hash)
		}
	}
	if err := s2.Verify(); err != nil {
		t.Fatal(err)
	}
	if !slices.IsSortedFunc(s2.Accounts, func(x, y snapshot.Account) int { return cmpStr(x.ID, y.ID) }) ||
		!slices.IsSortedFunc(s2.Keys, func(x, y snapshot.Key) int { return cmpStr(x.ID, y.ID) }) ||
		!slices.IsSortedFunc(s2.Models, func(x, y snapshot.Model) int { return cmpStr(x.ID, y.ID) }) ||
		!slices.IsSortedFunc(s2.Routes, func(x, y snapshot.Route) int { return cmpStr(x.ID, y.ID) }) {
		t.Fatal("snapshot slices not sorted by ID")
	}
	if len(s2.Accounts) != 2 || len(s2.Keys) != 2 || len(s2.Models) != 2 || len(s2.Routes) != 3 || len(s2.Balances) != 2 || s2.BalanceSeq == 0 {
		t.Fatalf("snapshot content: %+v", s2.Content)
	}
	var bm []string
	for _, x := range s2.Accounts {
		if x.ID == b.ID {
			bm = x.Models
		}
	}
	if !slices.Equal(bm, []string{"llama-3.1-8b", "nomic-embed"}) {
		t.Fatalf("account models %v", bm)
	}
	// Defaults are part of the content.
	s4, _ := s.CompileSnapshot(ctx, snapshot.Limits{MaxConcurrent: 4})
	if s4.Version != 3 {
		t.Fatalf("default limits change: v%d", s4.Version)
	}
	// Balances are not: a credit keeps the version (nodes learn it from the balance watch),
	// while the snapshot compiled after it carries the new balance, valid under its hash.
	if _, err := s.AddCredit(ctx, store.Credit{AccountID: b.ID, AmountMicroSEK: 7, Kind: store.KindCredit}); err != nil {
		t.Fatal(err)
	}
	s5, err := s.CompileSnapshot(ctx, snapshot.Limits{MaxConcurrent: 4})
	if err != nil {
		t.Fatal(err)
	}
	if s5.Version != s4.Version || s5.BalanceSeq <= s4.BalanceSeq || s5.Verify() != nil {
		t.Fatalf("after a credit: v%d (want v%d), balance seq %d -> %d, verify %v", s5.Version, s4.Version, s4.BalanceSeq, s5.BalanceSeq, s5.Verify())
	}
	for _, bal := range s5.Balances {
		if bal.AccountID == b.ID && bal.MicroSEK != 7 {
			t.Fatalf("credited balance %d", bal.MicroSEK)
		}
	}
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
