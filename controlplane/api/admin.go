package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/controlplane/catalog"
	"github.com/sekgate/gateway/controlplane/httpjson"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/apikey"
	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/residency"
	"github.com/sekgate/gateway/shared/snapshot"
)

const (
	adminBodyLimit   = 1 << 20
	catalogBodyLimit = 8 << 20
)

func toAccountJSON(a store.Account) adminapi.Account {
	m := a.Models
	if m == nil {
		m = []string{}
	}
	return adminapi.Account{ID: a.ID, Customer: a.Customer, Residency: a.Residency, Suspended: a.Suspended,
		SuspensionReason: a.SuspensionReason, CreatedAt: a.CreatedAt.UTC(), BalanceMicroSEK: a.BalanceMicroSEK, BalanceSEK: money.FormatSEK(a.BalanceMicroSEK),
		Models: m, Limits: a.Limits, QueueWeight: a.QueueWeight}
}

func toKeyJSON(k store.Key) adminapi.Key {
	return adminapi.Key{ID: k.ID, AccountID: k.AccountID, Name: k.Name, CreatedAt: k.CreatedAt.UTC(), ExpiresAt: utc(k.ExpiresAt),
		RevokedAt: utc(k.RevokedAt), Limits: k.Limits}
}

// accountJSON is an account as the admin API answers it: with its effective limits.
func (s *server) accountJSON(a store.Account) adminapi.Account {
	out := toAccountJSON(a)
	out.EffectiveLimits = adminapi.NewEffectiveLimits(nil, a.Limits, s.cfg.DefaultLimits)
	return out
}

// keyJSON is a key as the admin API answers it: with its effective limits, which depend on
// its account's limits (acct).
func (s *server) keyJSON(k store.Key, acct *snapshot.Limits) adminapi.Key {
	out := toKeyJSON(k)
	out.EffectiveLimits = adminapi.NewEffectiveLimits(k.Limits, acct, s.cfg.DefaultLimits)
	return out
}

// keyAnswer is keyJSON for a key whose account the handler has not read.
func (s *server) keyAnswer(ctx context.Context, k store.Key) (adminapi.Key, error) {
	a, err := s.cfg.Store.GetAccount(ctx, k.AccountID)
	if err != nil {
		return adminapi.Key{}, fmt.Errorf("read the account of key %s: %w", k.ID, err)
	}
	return s.keyJSON(k, a.Limits), nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func validText(s string, max int) bool {
	return utf8.ValidString(s) && utf8.RuneCountInString(s) <= max && !strings.ContainsAny(s, "\x00")
}

// queueWeight reads an account's queue_weight from the admin API: a whole number in
// snapshot.MinQueueWeight..MaxQueueWeight. It writes the 400 itself when it is not.
func queueWeight(w http.ResponseWriter, raw json.RawMessage) (int, bool) {
	var n int
	if err := json.Unmarshal(raw, &n); err != nil || !snapshot.ValidQueueWeight(n) {
		writeError(w, invalid("queue_weight", "queue_weight must be a whole number from %d to %d.",
			snapshot.MinQueueWeight, snapshot.MaxQueueWeight))
		return 0, false
	}
	return n, true
}

func (s *server) createAccount(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Customer    string          `json:"customer"`
		Residency   string          `json:"residency"`
		QueueWeight json.RawMessage `json:"queue_weight"`
	}
	if !decodeJSON(w, r, adminBodyLimit, &in) {
		return
	}
	weight := 0 // the store's default
	if len(in.QueueWeight) > 0 {
		var ok bool
		if weight, ok = queueWeight(w, in.QueueWeight); !ok {
			return
		}
	}
	in.Customer = strings.TrimSpace(in.Customer)
	if in.Customer == "" || !validText(in.Customer, 200) {
		writeError(w, invalid("customer", "customer is required (at most 200 characters)."))
		return
	}
	if !residency.Valid(in.Residency) {
		writeError(w, invalid("residency", "residency must be one of se, eu, any."))
		return
	}
	a, err := s.cfg.Store.CreateAccountWith(r.Context(), store.NewAccount{Customer: in.Customer, Residency: in.Residency, QueueWeight: weight})
	if err != nil {
		s.storeError(w, r, err, "account")
		return
	}
	writeJSON(w, http.StatusCreated, s.accountJSON(a))
}

func (s *server) listAccounts(w http.ResponseWriter, r *http.Request) {
	if q := r.URL.Query(); q.Has("q") || q.Has("limit") || q.Has("after") {
		s.searchAccounts(w, r)
		return
	}
	accts, err := s.cfg.Store.ListAccounts(r.Context())
	if err != nil {
		s.storeError(w, r, err, "accounts")
		return
	}
	out := adminapi.List[adminapi.Account]{Data: make([]adminapi.Account, len(accts))}
	for i, a := range accts {
		out.Data[i] = s.accountJSON(a)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) getAccount(w http.ResponseWriter, r *http.Request) {
	a, err := s.cfg.Store.GetAccount(r.Context(), r.PathValue("id"))
	if err != nil {
		s.storeError(w, r, err, "account")
		return
	}
	writeJSON(w, http.StatusOK, s.accountJSON(a))
}

func (s *server) patchAccount(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Residency   *string         `json:"residency"`
		Suspended   *bool           `json:"suspended"`
		Reason      *string         `json:"suspension_reason"`
		Limits      json.RawMessage `json:"limits"`
		QueueWeight json.RawMessage `json:"queue_weight"`
	}
	if !decodeJSON(w, r, adminBodyLimit, &in) {
		return
	}
	p := store.AccountPatch{Residency: in.Residency, Suspended: in.Suspended}
	if !suspensionReason(w, in.Suspended, in.Reason, &p) {
		return
	}
	if len(in.QueueWeight) > 0 {
		n, ok := queueWeight(w, in.QueueWeight)
		if !ok {
			return
		}
		p.QueueWeight = &n
	}
	if in.Residency != nil && !residency.Valid(*in.Residency) {
		writeError(w, invalid("residency", "residency must be one of se, eu, any."))
		return
	}
	if len(in.Limits) > 0 {
		if string(in.Limits) == "null" {
			p.ClearLimits = true
		} else {
			l, err := catalog.DecodeLimits(in.Limits)
			if err != nil {
				writeError(w, invalid("limits", "limits must be an object of non-negative requests_per_second, burst and max_concurrent, or null."))
				return
			}
			p.Limits = &l
		}
	}
	a, err := s.cfg.Store.UpdateAccount(r.Context(), r.PathValue("id"), p)
	if err != nil {
		s.storeError(w, r, err, "account")
		return
	}
	writeJSON(w, http.StatusOK, s.accountJSON(a))
}

// suspensionReason checks a PATCH's suspension_reason and puts it in p: text of at most
// 1000 characters, given only with "suspended": true. It writes the 400 itself when not.
func suspensionReason(w http.ResponseWriter, suspended *bool, reason *string, p *store.AccountPatch) bool {
	if reason == nil {
		return true
	}
	text := strings.TrimSpace(*reason)
	switch {
	case suspended == nil || !*suspended:
		writeError(w, invalid("suspension_reason", `suspension_reason goes with "suspended": true.`))
		return false
	case !validText(text, 1000):
		writeError(w, invalid("suspension_reason", "suspension_reason must be at most 1000 characters."))
		return false
	}
	p.SuspensionReason = &text
	return true
}

func (s *server) addCredit(w http.ResponseWriter, r *http.Request) {
	var in struct {
		AmountSEK json.RawMessage `json:"amount_sek"`
		Note      string          `json:"note"`
		Reference string          `json:"reference"`
	}
	if !decodeJSON(w, r, adminBodyLimit, &in) {
		return
	}
	var amountStr string
	if err := json.Unmarshal(in.AmountSEK, &amountStr); err != nil {
		writeError(w, invalid("amount_sek", `amount_sek must be a decimal string such as "100.00".`))
		return
	}
	micro, err := money.ParseSEK(amountStr)
	if err != nil || micro <= 0 {
		writeError(w, invalid("amount_sek", `amount_sek must be a positive decimal string with at most 6 decimals, such as "100.00".`))
		return
	}
	if !validText(in.Note, 1000) {
		writeError(w, invalid("note", "note must be at most 1000 characters."))
		return
	}
	if !validText(in.Reference, 200) {
		writeError(w, invalid("reference", "reference must be at most 200 characters."))
		return
	}
	ref := ""
	if in.Reference != "" {
		ref = "admin:" + in.Reference
	}
	res, err := s.cfg.Store.AddCredit(r.Context(), store.Credit{AccountID: r.PathValue("id"), AmountMicroSEK: micro,
		Kind: store.KindCredit, Reference: ref, Note: in.Note})
	if err != nil {
		s.storeError(w, r, err, "account")
		return
	}
	writeJSON(w, http.StatusOK, adminapi.Credit{EntryID: res.Entry.ID, Applied: &res.Applied,
		BalanceMicroSEK: res.BalanceMicroSEK, BalanceSEK: money.FormatSEK(res.BalanceMicroSEK)})
}

func (s *server) createKey(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name          string          `json:"name"`
		ExpiresInDays json.RawMessage `json:"expires_in_days"`
	}
	if !decodeJSON(w, r, adminBodyLimit, &in) {
		return
	}
	if !validText(in.Name, 200) {
		writeError(w, invalid("name", "name must be at most 200 characters."))
		return
	}
	var expires *time.Time
	if len(in.ExpiresInDays) > 0 && string(in.ExpiresInDays) != "null" {
		var days int
		if err := json.Unmarshal(in.ExpiresInDays, &days); err != nil || days < apikey.MinExpiryDays || days > apikey.MaxExpiryDays {
			writeError(w, invalid("expires_in_days", "expires_in_days must be a whole number of days from %d to %d.", apikey.MinExpiryDays, apikey.MaxExpiryDays))
			return
		}
		t := s.now().UTC().Add(time.Duration(days) * 24 * time.Hour).Truncate(time.Second)
		expires = &t
	}
	k, secret, err := s.cfg.Store.CreateKey(r.Context(), r.PathValue("id"), in.Name, expires)
	if err != nil {
		s.storeError(w, r, err, "account")
		return
	}
	out, err := s.keyAnswer(r.Context(), k)
	if err != nil {
		s.storeError(w, r, err, "account")
		return
	}
	out.Secret = secret
	writeJSON(w, http.StatusCreated, out)
}

func (s *server) listKeys(w http.ResponseWriter, r *http.Request) {
	acct, err := s.cfg.Store.GetAccount(r.Context(), r.PathValue("id"))
	if err != nil {
		s.storeError(w, r, err, "account")
		return
	}
	keys, err := s.cfg.Store.ListKeys(r.Context(), r.PathValue("id"))
	if err != nil {
		s.storeError(w, r, err, "account")
		return
	}
	used, err := s.cfg.Store.KeysLastUse(r.Context(), r.PathValue("id"))
	if err != nil {
		s.storeError(w, r, err, "account")
		return
	}
	out := adminapi.List[adminapi.Key]{Data: make([]adminapi.Key, len(keys))}
	for i, k := range keys {
		out.Data[i] = s.keyJSON(k, acct.Limits)
		if t, ok := used[k.ID]; ok {
			out.Data[i].LastUsedAt = &t
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) revokeKey(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !apikey.ValidID(id) {
		writeError(w, notFound("key"))
		return
	}
	k, err := s.cfg.Store.RevokeKey(r.Context(), id)
	if err != nil {
		s.storeError(w, r, err, "key")
		return
	}
	s.writeKey(w, r, k)
}

// patchKey sets a key's own limits ({"limits": {...}}) or clears them ({"limits": null}).
func (s *server) patchKey(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !apikey.ValidID(id) {
		writeError(w, notFound("key"))
		return
	}
	var in struct {
		Limits json.RawMessage `json:"limits"`
	}
	if !decodeJSON(w, r, adminBodyLimit, &in) {
		return
	}
	if len(in.Limits) == 0 {
		writeError(w, invalid("limits", "limits is required: an object of requests_per_second, burst and max_concurrent, or null."))
		return
	}
	var l *snapshot.Limits
	if string(in.Limits) != "null" {
		v, err := catalog.DecodeLimits(in.Limits)
		if err != nil {
			writeError(w, invalid("limits", "limits must be an object of non-negative requests_per_second, burst and max_concurrent, or null."))
			return
		}
		l = &v
	}
	k, err := s.cfg.Store.SetKeyLimits(r.Context(), id, l)
	if err != nil {
		s.storeError(w, r, err, "key")
		return
	}
	s.writeKey(w, r, k)
}

// writeKey answers 200 with the key and its effective limits.
func (s *server) writeKey(w http.ResponseWriter, r *http.Request, k store.Key) {
	out, err := s.keyAnswer(r.Context(), k)
	if err != nil {
		s.storeError(w, r, err, "key")
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) enableModels(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Models []string `json:"models"`
		// AllowOutsideResidency enables models the account's residency policy admits no
		// route of (to test the data plane's refusal, or ahead of a route being added).
		AllowOutsideResidency bool `json:"allow_outside_residency"`
	}
	if !decodeJSON(w, r, adminBodyLimit, &in) {
		return
	}
	if len(in.Models) == 0 {
		writeError(w, invalid("models", "models must list at least one model ID or alias."))
		return
	}
	id := r.PathValue("id")
	if msg, err := s.unreachableModels(r, id, in.Models); in.AllowOutsideResidency {
	} else if err != nil {
		s.storeError(w, r, err, "account")
		return
	} else if msg != "" {
		writeError(w, apierror.New(http.StatusConflict, apierror.TypeInvalidRequest, apierror.CodeConflict, msg).WithParam("models"))
		return
	}
	if _, err := s.cfg.Store.EnableModels(r.Context(), id, in.Models); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			// Say which: the account or one of the models.
			if _, aerr := s.cfg.Store.GetAccount(r.Context(), id); aerr == nil {
				writeError(w, apierror.New(http.StatusNotFound, apierror.TypeNotFound, apierror.CodeModelNotFound, err.Error()).WithParam("models"))
				return
			}
		}
		s.storeError(w, r, err, "account")
		return
	}
	s.getAccount(w, r)
}

// unreachableModels says why models (IDs or aliases) cannot serve account id under its
// residency policy: each must have a route in a country the policy admits, or the
// customer would get 404 as for a typo. "" when every named model can serve it, or names
// an unknown model (EnableModels says so).
func (s *server) unreachableModels(r *http.Request, id string, names []string) (string, error) {
	acct, err := s.cfg.Store.GetAccount(r.Context(), id)
	if err != nil {
		return "", err
	}
	models, err := s.cfg.Store.ListModels(r.Context())
	if err != nil {
		return "", err
	}
	var bad []string
	for _, name := range names {
		for _, m := range models {
			if m.ID != name && !slices.Contains(m.Aliases, name) {
				continue
			}
			var countries []string
			ok := false
			for _, rt := range m.Routes {
				ok = ok || residency.Satisfies(acct.Residency, rt.Country)
				if !slices.Contains(countries, rt.Country) {
					countries = append(countries, rt.Country)
				}
			}
			if !ok {
				where := "it has no route"
				if len(countries) > 0 {
					where = "its routes are in " + strings.Join(countries, ", ")
				}
				bad = append(bad, fmt.Sprintf("%s (%s)", m.ID, where))
			}
		}
	}
	if len(bad) == 0 {
		return "", nil
	}
	return fmt.Sprintf("The account's residency policy (%s) admits no route of %s; the customer could never use it. Add a route in an admitted country or change the account's residency first.",
		acct.Residency, strings.Join(bad, "; ")), nil
}

func (s *server) disableModel(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Store.DisableModel(r.Context(), r.PathValue("id"), r.PathValue("model")); err != nil {
		s.storeError(w, r, err, "account or enabled model")
		return
	}
	s.getAccount(w, r)
}

func (s *server) listModels(w http.ResponseWriter, r *http.Request) {
	models, err := s.cfg.Store.ListModels(r.Context())
	if err != nil {
		s.storeError(w, r, err, "models")
		return
	}
	out := adminapi.List[adminapi.Model]{Data: make([]adminapi.Model, len(models))}
	for i, m := range models {
		out.Data[i] = modelJSON(m)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) listRoutes(w http.ResponseWriter, r *http.Request) {
	routes, err := s.cfg.Store.ListRoutes(r.Context())
	if err != nil {
		s.storeError(w, r, err, "routes")
		return
	}
	problems, err := s.routeProblems(r)
	if err != nil {
		s.storeError(w, r, err, "routes")
		return
	}
	replicas, err := s.replicaReports(r, problems)
	if err != nil {
		s.storeError(w, r, err, "routes")
		return
	}
	out := adminapi.List[adminapi.ListedRoute]{Data: make([]adminapi.ListedRoute, len(routes))}
	for i, rt := range routes {
		out.Data[i] = adminapi.ListedRoute{Route: rt, Problems: problems[rt.ID], Replicas: replicas[rt.ID]}
		if out.Data[i].Problems == nil {
			out.Data[i].Problems = map[string]string{}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// putCatalog is PUT /admin/v1/catalog[?dry_run=true]: a JSON catalogue, whose problems
// are answered with their line and column in the body.
func (s *server) putCatalog(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r, catalogBodyLimit)
	if !ok {
		return
	}
	c, src, err := catalog.ParseAs(body, catalog.FormatJSON)
	if err == nil {
		err = src.Locate(c.Validate())
	}
	if err != nil {
		s.storeError(w, r, err, "catalogue")
		return
	}
	warnings, err := s.catalogueWarnings(r, c)
	if err != nil {
		s.storeError(w, r, err, "catalogue")
		return
	}
	if isDryRun(r) { // a preview: nothing changes
		nr := 0
		for _, m := range c.Models {
			nr += len(m.Routes)
		}
		writeJSON(w, http.StatusOK, adminapi.CatalogResult{Models: len(c.Models), Routes: nr, DryRun: true, Warnings: warnings})
		return
	}
	nm, nr, err := s.cfg.Store.UpsertCatalog(r.Context(), c)
	if err != nil {
		s.storeError(w, r, err, "model")
		return
	}
	writeJSON(w, http.StatusOK, adminapi.CatalogResult{Models: nm, Routes: nr, Warnings: warnings})
}

// getCatalog is GET /admin/v1/catalog: every model with its routes, in the shape PUT
// takes, so an export loads back as it is.
func (s *server) getCatalog(w http.ResponseWriter, r *http.Request) {
	models, err := s.cfg.Store.ListModels(r.Context())
	if err != nil {
		s.storeError(w, r, err, "catalogue")
		return
	}
	out := catalog.Catalog{Models: models}
	if out.Models == nil {
		out.Models = []catalog.Model{}
	}
	for i := range out.Models {
		m := &out.Models[i]
		if m.Aliases == nil {
			m.Aliases = []string{}
		}
		if m.Routes == nil {
			m.Routes = []snapshot.Route{}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// isDryRun is whether a change was asked only to be checked (?dry_run=true).
func isDryRun(r *http.Request) bool { return r.URL.Query().Get("dry_run") == "true" }

func (s *server) listNodes(w http.ResponseWriter, r *http.Request) {
	nodes, err := s.cfg.Store.ListNodes(r.Context())
	if err != nil {
		s.storeError(w, r, err, "nodes")
		return
	}
	out := adminapi.List[adminapi.Node]{Data: make([]adminapi.Node, len(nodes))}
	for i, n := range nodes {
		out.Data[i] = adminapi.Node{NodeID: n.NodeID, AppliedVersion: n.AppliedVersion, LastSeen: n.LastSeen.UTC(), Region: n.Region,
			SpoolAgeMs: n.SpoolAge.Milliseconds()}
		if !n.SpoolReportedAt.IsZero() {
			at := n.SpoolReportedAt.UTC()
			out.Data[i].SpoolReportedAt = &at
		}
	}
	if err := s.addBreakers(r, out.Data); err != nil {
		s.storeError(w, r, err, "nodes")
		return
	}
	if err := s.addRouteHealth(r, out.Data); err != nil {
		s.storeError(w, r, err, "nodes")
		return
	}
	s.addFleetModes(out.Data)
	writeJSON(w, http.StatusOK, out)
}

func (s *server) snapshotInfo(w http.ResponseWriter, r *http.Request) {
	cur, _ := s.cfg.Snapshots.Current()
	if cur == nil {
		writeError(w, httpjson.ErrNotReady)
		return
	}
	writeJSON(w, http.StatusOK, adminapi.SnapshotInfo{Version: cur.Snapshot.Version, Hash: cur.Snapshot.Hash,
		GeneratedAt: cur.Snapshot.GeneratedAt, BalanceSeq: cur.Snapshot.BalanceSeq})
}
