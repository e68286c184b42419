package console

import (
	"encoding/json"
	"io"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/controlplane/catalog"
	"github.com/sekgate/gateway/shared/snapshot"
)

type catalogueView struct {
	Models []adminapi.Model
	Diff   *catalogueDiff
	// Breakers is what the nodes last reported of each route's breaker, by route ID
	// (absent: closed wherever reported).
	Breakers map[string]string
	// Reported is whether any node reports its breakers.
	Reported bool
	// Problems is what the nodes report keeps them from using each route, by route ID:
	// "credential_missing on node-a" (absent: usable wherever reported).
	Problems map[string]string
}

// loadBreakers collects the nodes' breaker reports: "open on node-a, half-open on node-b".
func (c *Console) loadBreakers(r *http.Request, s *session, v *catalogueView) {
	var nodes adminapi.List[adminapi.Node]
	c.api(r, s, http.MethodGet, "/admin/v1/nodes", nil, &nodes)
	for _, n := range nodes.Data {
		v.Reported = v.Reported || n.Breakers != nil
	}
	v.Breakers = byRoute(nodes.Data, func(n adminapi.Node) map[string]string { return n.Breakers })
	v.Problems = byRoute(nodes.Data, func(n adminapi.Node) map[string]string { return n.RouteProblems })
}

// byRoute turns what each node reports per route (of) into one line per route:
// "open on node-a, half-open on node-b". What a node reports of a discovered route's
// replica ("<route>@<ip:port>") goes to that route: "replica 10.0.0.5:8000 open on node-a".
func byRoute(nodes []adminapi.Node, of func(adminapi.Node) map[string]string) map[string]string {
	out := map[string]string{}
	for _, n := range nodes {
		m := of(n)
		routes := make([]string, 0, len(m))
		for route := range m {
			routes = append(routes, route)
		}
		sort.Strings(routes)
		for _, route := range routes {
			key, text := route, m[route]+" on "+n.NodeID
			if parent, addr, ok := snapshot.SplitReplicaID(route); ok {
				key, text = parent, "replica "+addr+" "+text
			}
			if out[key] != "" {
				out[key] += ", "
			}
			out[key] += text
		}
	}
	return out
}

func (c *Console) cataloguePage(w http.ResponseWriter, r *http.Request, s *session) {
	p := page{Title: "Catalogue", Nav: "catalogue", Session: s}
	c.flash(w, r, &p)
	var v catalogueView
	var l adminapi.List[adminapi.Model]
	if st, msg := c.api(r, s, http.MethodGet, "/admin/v1/models", nil, &l); st != http.StatusOK {
		p.Error = msg
	}
	v.Models = l.Data
	c.loadBreakers(r, s, &v)
	p.Data = v
	c.render(w, http.StatusOK, "catalogue", p)
}

// catalogueDiff is what loading a catalogue file would change: per model of the file,
// whether it is new, changed (which fields, which routes) or unchanged. Models not in
// the file are left alone by a load.
type catalogueDiff struct {
	JSON    string // the file as the JSON the API takes
	Entries []modelDiff
	Changes int
	// Warnings say what would keep nodes from using the file's routes (a credential they
	// lack, a server they cannot reach), as the nodes last reported.
	Warnings []string
}

type modelDiff struct {
	ID      string
	Status  string // new, changed, unchanged
	Details []string
}

// readCatalogueForm returns the uploaded catalogue file and its name, or the pasted text
// (name "").
func (c *Console) readCatalogueForm(r *http.Request) ([]byte, string, error) {
	if f, h, err := r.FormFile("file"); err == nil {
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, 8<<20))
		return b, path.Base(strings.ReplaceAll(h.Filename, "\\", "/")), err
	}
	return []byte(r.PostFormValue("catalogue")), "", nil
}

// catalogueProblem is the page's error for a catalogue that cannot be loaded: its format
// (YAML or JSON, as read), the file's name and where in it the problem is.
func catalogueProblem(src []byte, name string, err error) string {
	what := "The " + string(catalog.Sniff(src)) + " catalogue"
	if name != "" {
		what += " file " + name
	}
	return what + " cannot be loaded: " + err.Error()
}

func (c *Console) cataloguePreview(w http.ResponseWriter, r *http.Request, s *session) {
	p := page{Title: "Catalogue", Nav: "catalogue", Session: s}
	var l adminapi.List[adminapi.Model]
	c.api(r, s, http.MethodGet, "/admin/v1/models", nil, &l)
	v := catalogueView{Models: l.Data}
	c.loadBreakers(r, s, &v)
	src, name, err := c.readCatalogueForm(r)
	if err == nil && strings.TrimSpace(string(src)) == "" {
		p.Error = "Choose a catalogue file (YAML or JSON)."
		p.Data = v
		c.render(w, http.StatusOK, "catalogue", p)
		return
	}
	var cat *catalog.Catalog
	if err == nil {
		cat, _, err = catalog.Load(src)
	}
	if err != nil {
		p.Error = catalogueProblem(src, name, err)
		p.Data = v
		c.render(w, http.StatusOK, "catalogue", p)
		return
	}
	v.Diff = diffCatalogue(l.Data, cat)
	var check adminapi.CatalogResult // what the nodes' reports say of the file's routes
	if st, _ := c.api(r, s, http.MethodPut, "/admin/v1/catalog?dry_run=true", json.RawMessage(v.Diff.JSON), &check); st == http.StatusOK {
		v.Diff.Warnings = check.Warnings
	}
	p.Data = v
	c.render(w, http.StatusOK, "catalogue", p)
}

func (c *Console) catalogueApply(w http.ResponseWriter, r *http.Request, s *session) {
	var res adminapi.CatalogResult
	body := json.RawMessage(r.PostFormValue("catalogue"))
	if !json.Valid(body) {
		c.failed(w, r, "/console/catalogue", "The previewed catalogue was lost; load the file again.")
		return
	}
	st, msg := c.api(r, s, http.MethodPut, "/admin/v1/catalog", body, &res)
	if st != http.StatusOK {
		c.failed(w, r, "/console/catalogue", msg)
		return
	}
	c.done(w, r, "/console/catalogue", "Catalogue loaded: "+strconv.Itoa(res.Models)+" models, "+strconv.Itoa(res.Routes)+" routes.")
}

// catalogueExport is GET /console/catalogue/export?format=yaml|json: the current
// catalogue as a file catalog load (and this page's load form) takes.
func (c *Console) catalogueExport(w http.ResponseWriter, r *http.Request, s *session) {
	f, ext, ctype := catalog.FormatYAML, "yaml", "application/yaml"
	if r.URL.Query().Get("format") == "json" {
		f, ext, ctype = catalog.FormatJSON, "json", "application/json"
	}
	var cat catalog.Catalog
	if st, msg := c.api(r, s, http.MethodGet, "/admin/v1/catalog", nil, &cat); st != http.StatusOK {
		c.failed(w, r, "/console/catalogue", msg)
		return
	}
	b, err := cat.Export(f)
	if err != nil {
		c.log.Error("console: export catalogue", "err", err)
		c.failed(w, r, "/console/catalogue", "The catalogue could not be exported.")
		return
	}
	w.Header().Set("Content-Type", ctype+"; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="catalog.`+ext+`"`)
	_, _ = w.Write(b)
}

func diffCatalogue(current []adminapi.Model, next *catalog.Catalog) *catalogueDiff {
	js, _ := json.Marshal(next)
	d := &catalogueDiff{JSON: string(js)}
	have := map[string]adminapi.Model{}
	for _, m := range current {
		have[m.ID] = m
	}
	for _, m := range next.Models {
		old, ok := have[m.ID]
		e := modelDiff{ID: m.ID, Status: "unchanged"}
		if !ok {
			e.Status = "new"
			e.Details = append(e.Details, strconv.Itoa(len(m.Routes))+" routes")
			d.Changes++
			d.Entries = append(d.Entries, e)
			continue
		}
		e.Details = fieldChanges(old.Model, m.Model, old.Aliases)
		e.Details = append(e.Details, routeChanges(old.Routes, m.Routes)...)
		if len(e.Details) > 0 {
			e.Status = "changed"
			d.Changes++
		}
		d.Entries = append(d.Entries, e)
	}
	return d
}

func fieldChanges(old, next snapshot.Model, oldAliases []string) []string {
	var out []string
	ch := func(what, a, b string) {
		if a != b {
			out = append(out, what+": "+a+" → "+b)
		}
	}
	ch("endpoint", old.Endpoint, next.Endpoint)
	ch("input öre per million tokens", strconv.FormatInt(old.InputOrePerMillion, 10), strconv.FormatInt(next.InputOrePerMillion, 10))
	ch("output öre per million tokens", strconv.FormatInt(old.OutputOrePerMillion, 10), strconv.FormatInt(next.OutputOrePerMillion, 10))
	ch("context tokens", strconv.FormatInt(old.ContextTokens, 10), strconv.FormatInt(next.ContextTokens, 10))
	a, b := append([]string(nil), oldAliases...), append([]string(nil), next.Aliases...)
	sort.Strings(a)
	sort.Strings(b)
	ch("aliases", strings.Join(a, ", "), strings.Join(b, ", "))
	return out
}

func routeChanges(old, next []snapshot.Route) []string {
	var out []string
	was := map[string]string{}
	for _, r := range old {
		j, _ := json.Marshal(r)
		was[r.ID] = string(j)
	}
	for _, r := range next {
		j, _ := json.Marshal(r)
		prev, ok := was[r.ID]
		switch {
		case !ok:
			out = append(out, "route "+r.ID+" added ("+r.Region+")")
		case prev != string(j):
			out = append(out, "route "+r.ID+" changed")
		}
		delete(was, r.ID)
	}
	gone := make([]string, 0, len(was))
	for id := range was {
		gone = append(gone, id)
	}
	sort.Strings(gone)
	for _, id := range gone {
		out = append(out, "route "+id+" removed")
	}
	return out
}
