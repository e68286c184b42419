package console

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/internal/csvsafe"
	"github.com/sekgate/gateway/shared/usage"
)

func atoi(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// answerText picks the assistant's text out of a chat completion answer, or the error's
// message; else the body as it is.
func answerText(body json.RawMessage) string {
	var a struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &a) == nil {
		if len(a.Choices) > 0 {
			return a.Choices[0].Message.Content
		}
		if a.Error != nil {
			return a.Error.Message
		}
	}
	var buf bytes.Buffer
	if json.Indent(&buf, body, "", "  ") == nil {
		return buf.String()
	}
	return string(body)
}

func (c *Console) signupsPage(w http.ResponseWriter, r *http.Request, s *session) {
	p := page{Title: "Signups", Nav: "signups", Session: s}
	c.flash(w, r, &p)
	status := r.URL.Query().Get("status")
	if status == "" {
		status = "pending"
	}
	q := url.Values{"limit": {"200"}}
	if status != "all" {
		q.Set("status", status)
	}
	var l adminapi.List[adminapi.Signup]
	if st, msg := c.api(r, s, http.MethodGet, "/admin/v1/signups?"+q.Encode(), nil, &l); st != http.StatusOK {
		p.Error = msg
	}
	p.Data = struct {
		Status  string
		Signups []adminapi.Signup
	}{status, l.Data}
	c.render(w, http.StatusOK, "signups", p)
}

func (c *Console) signupAction(w http.ResponseWriter, r *http.Request, s *session) {
	id := url.PathEscape(r.PathValue("id"))
	var st int
	var msg, notice string
	var out adminapi.Signup
	switch r.PathValue("action") {
	case "approve":
		req := adminapi.ApproveSignupRequest{CreateAccount: r.PostFormValue("create_account") == "yes", Residency: r.PostFormValue("residency")}
		st, msg = c.api(r, s, http.MethodPost, "/admin/v1/signups/"+id+"/approve", req, &out)
		notice = "Signup approved."
		if out.AccountID != nil {
			notice = "Signup approved; account " + *out.AccountID + " created."
		}
	case "reject":
		st, msg = c.api(r, s, http.MethodPost, "/admin/v1/signups/"+id+"/reject", nil, &out)
		notice = "Signup rejected."
	default:
		http.Error(w, "Unknown action.", http.StatusNotFound)
		return
	}
	if st != http.StatusOK {
		c.failed(w, r, "/console/signups", msg)
		return
	}
	c.done(w, r, "/console/signups", notice)
}

func (c *Console) overviewPage(w http.ResponseWriter, r *http.Request, s *session) {
	p := page{Title: "Overview", Nav: "overview", Session: s}
	c.flash(w, r, &p)
	var o adminapi.Overview
	if st, msg := c.api(r, s, http.MethodGet, "/admin/v1/overview", nil, &o); st != http.StatusOK {
		p.Error = msg
	}
	results := make([]resultCount, 0, len(o.ResultsToday))
	var failed int64
	for res, n := range o.ResultsToday {
		results = append(results, resultCount{res, n})
		if res != "ok" {
			failed += n
		}
	}
	sort.Slice(results, func(i, j int) bool {
		return results[i].N > results[j].N || results[i].N == results[j].N && results[i].Result < results[j].Result
	})
	routes := make([]string, 0, len(o.UnhealthyRoutes))
	for r := range o.UnhealthyRoutes {
		routes = append(routes, r)
	}
	sort.Strings(routes)
	live := c.live(r, s, "Live: the whole service", adminapi.SeriesAll, "")
	p.Charts = live.Error == ""
	p.Data = struct {
		O       adminapi.Overview
		Results []resultCount
		Failed  int64
		Routes  []string
		Day     string
		Live    liveView
	}{o, results, failed, routes, c.now().UTC().Format("2006-01-02"), live}
	c.render(w, http.StatusOK, "overview", p)
}

type resultCount struct {
	Result string
	N      int64
}

func (c *Console) nodesPage(w http.ResponseWriter, r *http.Request, s *session) {
	p := page{Title: "Nodes", Nav: "nodes", Session: s}
	c.flash(w, r, &p)
	var l adminapi.List[adminapi.Node]
	if st, msg := c.api(r, s, http.MethodGet, "/admin/v1/nodes", nil, &l); st != http.StatusOK {
		p.Error = msg
	}
	var snap adminapi.SnapshotInfo
	c.api(r, s, http.MethodGet, "/admin/v1/snapshot", nil, &snap)
	p.Data = struct {
		Nodes    []adminapi.Node
		Snapshot adminapi.SnapshotInfo
		Now      time.Time
	}{l.Data, snap, c.now()}
	c.render(w, http.StatusOK, "nodes", p)
}

// recordFilters are the records page's query parameters passed to the API as they are;
// from_day and to_day (dates, UTC) become its from and to.
var recordFilters = []string{"account_id", "key_id", "model", "result", "from", "to", "after"}

// pageQuery is a page's query in without its paging cursor ("after"), with key set to
// value when key is not empty: the links a listing page makes to itself.
func pageQuery(in url.Values, key, value string) url.Values {
	q := url.Values{}
	for k, v := range in {
		if k != "after" {
			q[k] = v
		}
	}
	if key != "" {
		q.Set(key, value)
	}
	return q
}

// recordResults are the results a record can have (shared/usage), offered as a filter.
var recordResults = []string{usage.ResultOK, usage.ResultUpstreamError, usage.ResultTimeout, usage.ResultRateLimited,
	usage.ResultNoRoute, usage.ResultRejected, usage.ResultIncomplete, usage.ResultCancelled, usage.ResultInterrupted}

// recordsQuery is the API query of the records page's form.
func recordsQuery(in url.Values, limit int) url.Values {
	q := listQuery(in, recordFilters...)
	q.Set("limit", strconv.Itoa(limit))
	if d, err := time.Parse("2006-01-02", in.Get("from_day")); err == nil {
		q.Set("from", d.UTC().Format(time.RFC3339))
	}
	if d, err := time.Parse("2006-01-02", in.Get("to_day")); err == nil {
		q.Set("to", d.AddDate(0, 0, 1).UTC().Format(time.RFC3339)) // the whole day
	}
	return q
}

// accountNames maps account IDs to customer names (for lists that show names).
func (c *Console) accountNames(r *http.Request, s *session) (map[string]string, []adminapi.Account) {
	var accts adminapi.List[adminapi.Account]
	c.api(r, s, http.MethodGet, "/admin/v1/accounts", nil, &accts)
	names := make(map[string]string, len(accts.Data))
	for _, a := range accts.Data {
		names[a.ID] = a.Customer
	}
	sort.Slice(accts.Data, func(i, j int) bool { return accts.Data[i].Customer < accts.Data[j].Customer })
	return names, accts.Data
}

func (c *Console) recordsPage(w http.ResponseWriter, r *http.Request, s *session) {
	p := page{Title: "Request records", Nav: "records", Session: s}
	c.flash(w, r, &p)
	in := r.URL.Query()
	q := recordsQuery(in, 50)
	var rp adminapi.RecordPage
	if st, msg := c.api(r, s, http.MethodGet, "/admin/v1/records?"+q.Encode(), nil, &rp); st != http.StatusOK {
		p.Error = msg
	}
	next := ""
	if rp.NextCursor != "" {
		next = "/console/records?" + pageQuery(in, "after", rp.NextCursor).Encode()
	}
	names, accts := c.accountNames(r, s)
	var price, promptT, outT int64
	for _, rec := range rp.Data {
		price, promptT, outT = price+rec.PriceMicroSEK, promptT+rec.PromptTokens, outT+rec.CompletionTokens
	}
	p.Data = struct {
		F                       url.Values
		Records                 []adminapi.Record
		Next, CSV               string
		Names                   map[string]string
		Accounts                []adminapi.Account
		Results                 []string
		Price, PromptT, OutputT int64
	}{in, rp.Data, next, "/console/records.csv?" + pageQuery(in, "", "").Encode(), names, accts, recordResults, price, promptT, outT}
	c.render(w, http.StatusOK, "records", p)
}

// recordsCSV answers the records page's filters as CSV (up to 1,000 records, newest first),
// for a spreadsheet, cells it would run as a formula defused (internal/csvsafe).
func (c *Console) recordsCSV(w http.ResponseWriter, r *http.Request, s *session) {
	var rp adminapi.RecordPage
	if st, msg := c.api(r, s, http.MethodGet, "/admin/v1/records?"+recordsQuery(r.URL.Query(), 1000).Encode(), nil, &rp); st != http.StatusOK {
		http.Error(w, msg, st)
		return
	}
	names, _ := c.accountNames(r, s)
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="records.csv"`)
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"time_utc", "request_id", "account_id", "customer", "key_id", "model", "endpoint", "status", "result",
		"prompt_tokens", "completion_tokens", "price_sek", "duration_ms"})
	for _, rec := range rp.Data {
		key := ""
		if rec.KeyID != nil {
			key = *rec.KeyID
		}
		row := []string{rec.TS.UTC().Format(time.RFC3339), rec.RequestID, rec.AccountID, names[rec.AccountID], key, rec.Model, rec.Endpoint,
			strconv.Itoa(rec.Status), rec.Result, strconv.FormatInt(rec.PromptTokens, 10), strconv.FormatInt(rec.CompletionTokens, 10),
			formatSEK(rec.PriceMicroSEK), strconv.FormatInt(rec.DurationMS, 10)}
		for i, cell := range row {
			row[i] = csvsafe.Cell(cell)
		}
		_ = cw.Write(row)
	}
	cw.Flush()
}

func (c *Console) auditPage(w http.ResponseWriter, r *http.Request, s *session) {
	p := page{Title: "Audit log", Nav: "audit", Session: s}
	c.flash(w, r, &p)
	in := r.URL.Query()
	q := listQuery(in, "target", "actor", "before")
	var ap adminapi.AuditPage
	if st, msg := c.api(r, s, http.MethodGet, "/admin/v1/audit?"+q.Encode(), nil, &ap); st != http.StatusOK {
		p.Error = msg
	}
	next := ""
	if ap.NextBefore != nil {
		q.Set("before", strconv.FormatInt(*ap.NextBefore, 10))
		q.Del("limit")
		next = "/console/audit?" + q.Encode()
	}
	names := map[string]string{} // account IDs to customer names, for the entries in words
	var accts adminapi.List[adminapi.Account]
	c.api(r, s, http.MethodGet, "/admin/v1/accounts", nil, &accts)
	for _, a := range accts.Data {
		names[a.ID] = a.Customer
	}
	type entry struct {
		adminapi.AuditEntry
		Words string
	}
	entries := make([]entry, len(ap.Data))
	for i, e := range ap.Data {
		entries[i] = entry{e, auditWords(e, names)}
	}
	p.Data = struct {
		F       url.Values
		Entries []entry
		Next    string
	}{in, entries, next}
	c.render(w, http.StatusOK, "audit", p)
}

// chart is a stacked bar chart of an account's daily spend per model, drawn as SVG by
// the template (presentation attributes only: the CSP allows no inline style).
type chart struct {
	Width, Height int
	Bars          []bar
	Legend        []legendItem
	MaxSEK        string
	Empty         bool
}

type bar struct {
	X, Y, W, H int
	Fill       string
	Title      string
}

type legendItem struct {
	Model, Fill, SEK string
}

var palette = []string{"#2f6fde", "#e0782f", "#2fa36b", "#b0413e", "#7a52c7", "#8c8c2f", "#2fa3a3", "#c74f93"}

func usageChart(u adminapi.UsageReport, now time.Time) chart {
	const w, h, pad = 720, 160, 4
	ch := chart{Width: w, Height: h + 20}
	days := u.Days
	if days <= 0 {
		days = 30
	}
	first := now.UTC().AddDate(0, 0, -(days - 1)).Truncate(24 * time.Hour)
	start := first.Format(time.DateOnly)
	perDay := map[string]int64{}
	perModel := map[string]int64{}
	for _, d := range u.Data {
		if d.Day < start {
			continue
		}
		perDay[d.Day] += d.PriceMicroSEK
		perModel[d.Model] += d.PriceMicroSEK
	}
	var peak int64
	for _, v := range perDay {
		peak = max(peak, v)
	}
	models := make([]string, 0, len(perModel))
	for m := range perModel {
		models = append(models, m)
	}
	sort.Strings(models)
	color := map[string]string{}
	for i, m := range models {
		color[m] = palette[i%len(palette)]
		ch.Legend = append(ch.Legend, legendItem{Model: m, Fill: color[m], SEK: formatSEK(perModel[m])})
	}
	if peak == 0 {
		ch.Empty = true
		return ch
	}
	ch.MaxSEK = formatSEK(peak)
	bw := w / days
	stack := map[string]int{}
	for _, d := range u.Data {
		if d.Day < start {
			continue
		}
		t, err := time.Parse(time.DateOnly, d.Day)
		if err != nil {
			continue
		}
		i := int(t.Sub(first).Hours() / 24)
		if i < 0 || i >= days {
			continue
		}
		bh := int(float64(d.PriceMicroSEK) / float64(peak) * float64(h)) // drawing only: no money is computed here
		if bh < 1 && d.PriceMicroSEK > 0 {
			bh = 1
		}
		y := h - stack[d.Day] - bh
		stack[d.Day] += bh
		ch.Bars = append(ch.Bars, bar{X: i*bw + pad/2, Y: y, W: bw - pad, H: bh, Fill: color[d.Model],
			Title: d.Day + " " + d.Model + ": " + formatSEK(d.PriceMicroSEK) + " SEK, " + strconv.FormatInt(d.Requests, 10) + " requests"})
	}
	return ch
}

// listQuery is the admin API query behind a console listing: the page's parameters named
// by keys (those set) and a page of 50.
func listQuery(in url.Values, keys ...string) url.Values {
	q := url.Values{"limit": {"50"}}
	for _, k := range keys {
		if v := in.Get(k); v != "" {
			q.Set(k, v)
		}
	}
	return q
}
