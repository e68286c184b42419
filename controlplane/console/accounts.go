package console

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/residency"
)

func (c *Console) accountsPage(w http.ResponseWriter, r *http.Request, s *session) {
	p := page{Title: "Accounts", Nav: "accounts", Session: s}
	c.flash(w, r, &p)
	in := r.URL.Query()
	q := url.Values{"limit": {"100"}, "q": {strings.TrimSpace(in.Get("q"))}}
	if a := in.Get("after"); a != "" {
		q.Set("after", a)
	}
	var l adminapi.AccountPage
	if st, msg := c.api(r, s, http.MethodGet, "/admin/v1/accounts?"+q.Encode(), nil, &l); st != http.StatusOK {
		p.Error = msg
	}
	next := ""
	if l.NextAfter != "" {
		next = "/console/accounts?" + pageQuery(in, "after", l.NextAfter).Encode()
	}
	accts := filterAccounts(l.Data, in)
	p.Data = struct {
		Q        string
		F        url.Values
		Accounts []adminapi.Account
		Next     string
		Sort     map[string]string // column to the link that sorts by it
	}{q.Get("q"), in, accts, next, sortLinks(in)}
	c.render(w, http.StatusOK, "accounts", p)
}

// lowBalance is where the accounts list's "low balance" filter draws the line (as the
// overview does).
const lowBalance = 50 * money.MicroPerSEK

// filterAccounts applies the accounts page's filters (residency, status, low balance) and
// its sort (customer, balance, created; a leading - reverses) to one page of accounts.
func filterAccounts(in []adminapi.Account, f url.Values) []adminapi.Account {
	out := make([]adminapi.Account, 0, len(in))
	for _, a := range in {
		switch {
		case f.Get("residency") != "" && a.Residency != f.Get("residency"):
		case f.Get("status") == "suspended" && !a.Suspended, f.Get("status") == "active" && a.Suspended:
		case f.Get("low") == "1" && a.BalanceMicroSEK >= lowBalance:
		default:
			out = append(out, a)
		}
	}
	by := strings.TrimPrefix(f.Get("sort"), "-")
	less := map[string]func(a, b adminapi.Account) bool{
		"customer": func(a, b adminapi.Account) bool { return strings.ToLower(a.Customer) < strings.ToLower(b.Customer) },
		"balance":  func(a, b adminapi.Account) bool { return a.BalanceMicroSEK < b.BalanceMicroSEK },
		"created":  func(a, b adminapi.Account) bool { return a.CreatedAt.Before(b.CreatedAt) },
	}[by]
	if less != nil {
		desc := strings.HasPrefix(f.Get("sort"), "-")
		sort.SliceStable(out, func(i, j int) bool {
			if desc {
				return less(out[j], out[i])
			}
			return less(out[i], out[j])
		})
	}
	return out
}

// sortLinks are the column headers' links: the same filters, sorted by the column, the
// other way round when it is already sorted by it.
func sortLinks(f url.Values) map[string]string {
	out := map[string]string{}
	for _, col := range []string{"customer", "balance", "created"} {
		order := col
		if f.Get("sort") == col {
			order = "-" + col
		}
		out[col] = "/console/accounts?" + pageQuery(f, "sort", order).Encode()
	}
	return out
}

func (c *Console) createAccount(w http.ResponseWriter, r *http.Request, s *session) {
	var a adminapi.Account
	st, msg := c.api(r, s, http.MethodPost, "/admin/v1/accounts",
		adminapi.CreateAccountRequest{Customer: r.PostFormValue("customer"), Residency: r.PostFormValue("residency")}, &a)
	if st != http.StatusCreated {
		c.failed(w, r, "/console/accounts", msg)
		return
	}
	c.done(w, r, "/console/accounts/"+url.PathEscape(a.ID), "Account created.")
}

// accountView is the account page's data.
type accountView struct {
	Account    adminapi.Account
	Keys       []adminapi.Key
	Ledger     adminapi.LedgerPage
	LedgerRows []ledgerRow // the page's entries, usage debits of one day as one row
	Usage      adminapi.UsageReport
	Refusals   adminapi.RefusalReport // requests refused before routing, 7 days
	Chart      chart
	Models     []string // catalogue models the account does not have yet and can reach
	NewKey     *adminapi.Key
	Now        time.Time // what key states are read at
	TestBox    *adminapi.TestBoxResult
	TestAnswer string
	Live       liveView          // the account's live service view
	Budgets    []adminapi.Budget // the account's and its keys', with their spend
}

func (c *Console) loadAccount(r *http.Request, s *session, id string, p *page) (accountView, bool) {
	v := accountView{Now: c.now()}
	base := "/admin/v1/accounts/" + url.PathEscape(id)
	if st, msg := c.api(r, s, http.MethodGet, base, nil, &v.Account); st != http.StatusOK {
		p.Error = msg
		return v, false
	}
	var keys adminapi.List[adminapi.Key]
	c.api(r, s, http.MethodGet, base+"/keys", nil, &keys)
	v.Keys = keys.Data
	lq := url.Values{"limit": {"20"}}
	if b := r.URL.Query().Get("before"); b != "" {
		lq.Set("before", b)
	}
	c.api(r, s, http.MethodGet, base+"/ledger?"+lq.Encode(), nil, &v.Ledger)
	v.LedgerRows = groupDebits(v.Ledger.Data)
	c.api(r, s, http.MethodGet, base+"/usage?days=30", nil, &v.Usage)
	c.api(r, s, http.MethodGet, base+"/refusals?days=7", nil, &v.Refusals)
	var budgets adminapi.List[adminapi.Budget]
	c.api(r, s, http.MethodGet, base+"/budgets", nil, &budgets)
	v.Budgets = budgets.Data
	v.Chart = usageChart(v.Usage, c.now())
	v.Live = c.live(r, s, "Live: this account", adminapi.SeriesAccount, v.Account.ID)
	var models adminapi.List[adminapi.Model]
	c.api(r, s, http.MethodGet, "/admin/v1/models", nil, &models)
	for _, m := range models.Data { // only what the account's residency lets it reach
		reachable := slices.ContainsFunc(m.Routes, func(r adminapi.Route) bool { return residency.Satisfies(v.Account.Residency, r.Country) })
		if reachable && !slices.Contains(v.Account.Models, m.ID) {
			v.Models = append(v.Models, m.ID)
		}
	}
	return v, true
}

func (c *Console) accountPage(w http.ResponseWriter, r *http.Request, s *session) {
	a, ok := c.takeOnce(w, r, s)
	if !ok {
		c.showAccount(w, r, s, r.PathValue("id"), nil)
		return
	}
	c.showAccount(w, r, s, r.PathValue("id"), func(v *accountView, p *page) {
		if a.key != nil && a.key.AccountID == v.Account.ID {
			v.NewKey = a.key
		}
		if a.testBox != nil {
			v.TestBox = a.testBox
			v.TestAnswer = answerText(a.testBox.Body)
		}
		p.Notice = a.notice
	})
}

func (c *Console) showAccount(w http.ResponseWriter, r *http.Request, s *session, id string, extra func(*accountView, *page)) {
	p := page{Title: "Account", Nav: "accounts", Session: s}
	c.flash(w, r, &p)
	v, ok := c.loadAccount(r, s, id, &p)
	if !ok {
		c.render(w, http.StatusNotFound, "message", p)
		return
	}
	p.Title = v.Account.Customer
	p.Charts = v.Live.Error == ""
	if extra != nil {
		extra(&v, &p)
	}
	p.Data = v
	c.render(w, http.StatusOK, "account", p)
}

// accountAction handles the account page's forms.
func (c *Console) accountAction(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	base := "/admin/v1/accounts/" + url.PathEscape(id)
	back := "/console/accounts/" + url.PathEscape(id)
	f := r.PostFormValue
	var st int
	var msg, notice string
	switch r.PathValue("action") {
	case "suspend", "resume":
		req, ok := suspension(r.PathValue("action"), f("reason"))
		if !ok {
			c.failed(w, r, back, "A suspension needs a reason.")
			return
		}
		st, msg = c.api(r, s, http.MethodPatch, base, req, nil)
		notice = map[bool]string{true: "Account suspended.", false: "Account resumed."}[*req.Suspended]
	case "residency":
		res := f("residency")
		st, msg = c.api(r, s, http.MethodPatch, base, adminapi.PatchAccountRequest{Residency: &res}, nil)
		notice = "Residency changed."
	case "queue-weight":
		n, ok := atoi(strings.TrimSpace(f("queue_weight")))
		if !ok {
			c.failed(w, r, back, "The queue weight must be a whole number from 1 to 100.")
			return
		}
		st, msg = c.api(r, s, http.MethodPatch, base, adminapi.PatchAccountRequest{QueueWeight: &n}, nil)
		notice = fmt.Sprintf("Queue weight set to %d.", n)
	case "credit":
		if strings.TrimSpace(f("reason")) == "" {
			c.failed(w, r, back, "A credit needs a reason.")
			return
		}
		var cr adminapi.Credit
		st, msg = c.api(r, s, http.MethodPost, base+"/credits", adminapi.CreditRequest{AmountSEK: normalizeAmount(f("amount_sek")), Note: f("reason")}, &cr)
		notice = "Credited; balance " + cr.BalanceSEK + " SEK."
	case "adjust":
		var cr adminapi.Credit
		st, msg = c.api(r, s, http.MethodPost, base+"/adjustments", adminapi.AdjustmentRequest{AmountSEK: normalizeAmount(f("amount_sek")), Reason: f("reason")}, &cr)
		notice = "Adjusted; balance " + cr.BalanceSEK + " SEK."
	case "models":
		st, msg = c.api(r, s, http.MethodPost, base+"/models", map[string][]string{"models": {f("model")}}, nil)
		notice = "Model enabled."
	case "disable-model":
		st, msg = c.api(r, s, http.MethodDelete, base+"/models/"+url.PathEscape(f("model")), nil, nil)
		notice = "Model disabled."
	case "keys":
		c.createKey(w, r, s, base, back)
		return
	case "test-box":
		var res adminapi.TestBoxResult
		n, _ := atoi(f("max_tokens"))
		st, msg = c.api(r, s, http.MethodPost, base+"/test-box", adminapi.TestBoxRequest{Model: f("model"), Message: f("message"), MaxTokens: n}, &res)
		if st == http.StatusOK { // after a redirect: a reload sends (and charges) nothing
			c.redirectOnce(w, r, s, back, onceAnswer{testBox: &res, notice: "Test-box request " + res.RequestID + " answered."})
			return
		}
	default:
		http.Error(w, "Unknown action.", http.StatusNotFound)
		return
	}
	if st < 200 || st >= 300 {
		c.failed(w, r, back, msg)
		return
	}
	c.done(w, r, back, notice)
}

// createKey handles the account page's key form. The secret is shown once, after a
// redirect (a reload creates nothing), never in a URL.
func (c *Console) createKey(w http.ResponseWriter, r *http.Request, s *session, base, back string) {
	var k adminapi.Key
	req := adminapi.CreateKeyRequest{Name: r.PostFormValue("name")}
	if d := r.PostFormValue("expires_in_days"); d != "" {
		n, ok := atoi(d)
		if !ok {
			c.failed(w, r, back, "Expiry must be a whole number of days.")
			return
		}
		req.ExpiresInDays = n
	}
	st, msg := c.api(r, s, http.MethodPost, base+"/keys", req, &k)
	if st != http.StatusCreated {
		c.failed(w, r, back, msg)
		return
	}
	c.redirectOnce(w, r, s, back, onceAnswer{key: &k, notice: "Key " + k.ID + " created. Copy the secret now: it is not shown again."})
}

// suspension is the PATCH of the suspend or resume form; ok is false for a suspension
// without a reason.
func suspension(action, reason string) (req adminapi.PatchAccountRequest, ok bool) {
	suspended := action == "suspend"
	reason = strings.TrimSpace(reason)
	if suspended && reason == "" {
		return req, false
	}
	return adminapi.PatchAccountRequest{Suspended: &suspended, SuspensionReason: reason}, true
}

func (c *Console) revokeKey(w http.ResponseWriter, r *http.Request, s *session) {
	var k adminapi.Key
	st, msg := c.api(r, s, http.MethodPost, "/admin/v1/keys/"+url.PathEscape(r.PathValue("id"))+"/revoke", nil, &k)
	back := "/console/accounts/" + url.PathEscape(r.PostFormValue("account"))
	if st != http.StatusOK {
		c.failed(w, r, back, msg)
		return
	}
	c.done(w, r, "/console/accounts/"+url.PathEscape(k.AccountID), "Key "+k.ID+" revoked.")
}

// ledgerRow is a line of the ledger view: one entry, or the usage debits of one UTC day
// together (Entries of them; the database keeps one per usage batch).
type ledgerRow struct {
	adminapi.LedgerEntry
	Entries int
}

// groupDebits merges consecutive usage debits of the same UTC day (entries come newest
// first); every other entry stays a row of its own.
func groupDebits(es []adminapi.LedgerEntry) []ledgerRow {
	var out []ledgerRow
	for _, e := range es {
		if n := len(out); n > 0 && e.Kind == "debit" && out[n-1].Kind == "debit" &&
			e.CreatedAt.UTC().Format(time.DateOnly) == out[n-1].CreatedAt.UTC().Format(time.DateOnly) {
			last := &out[n-1]
			last.Entries++
			last.AmountMicroSEK += e.AmountMicroSEK
			last.AmountSEK = money.FormatSEK(last.AmountMicroSEK)
			last.Note = fmt.Sprintf("usage of the day: %d debits (entries %d to %d)", last.Entries, e.ID, last.ID)
			continue
		}
		out = append(out, ledgerRow{LedgerEntry: e, Entries: 1})
	}
	return out
}
