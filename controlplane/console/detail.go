package console

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

// fact is one line of a detail page's facts: a label and a value, linked when Link is set.
type fact struct {
	Label, Value, Link string
}

// detailView is a model, route or node page: its facts and its live view.
type detailView struct {
	Kind, ID string
	Facts    []fact
	Missing  string // why the facts are absent (not in the catalogue, never polled)
	Live     liveView
}

func (c *Console) renderDetail(w http.ResponseWriter, r *http.Request, s *session, nav string, v detailView) {
	p := page{Title: v.Kind + " " + v.ID, Nav: nav, Session: s, Charts: v.Live.Error == ""}
	c.flash(w, r, &p)
	p.Data = v
	c.render(w, http.StatusOK, "detail", p)
}

// models reads the catalogue's models (nil when the API refused).
func (c *Console) models(r *http.Request, s *session) []adminapi.Model {
	var l adminapi.List[adminapi.Model]
	if st, _ := c.api(r, s, http.MethodGet, "/admin/v1/models", nil, &l); st != http.StatusOK {
		return nil
	}
	return l.Data
}

// modelPage is a model's page: its prices and routes, and its live view.
func (c *Console) modelPage(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	v := detailView{Kind: "Model", ID: id, Missing: "Not in the catalogue (its series stay until retention deletes them)."}
	for _, m := range c.models(r, s) {
		if m.ID != id {
			continue
		}
		v.Missing = ""
		v.Facts = []fact{{Label: "Endpoint", Value: m.Endpoint}, {Label: "Aliases", Value: strings.Join(m.Aliases, ", ")},
			{Label: "Input per million tokens", Value: strconv.FormatInt(m.InputOrePerMillion, 10) + " öre"},
			{Label: "Output per million tokens", Value: strconv.FormatInt(m.OutputOrePerMillion, 10) + " öre"}}
		for _, rt := range m.Routes {
			v.Facts = append(v.Facts, fact{Label: "Route", Value: rt.ID + " (" + rt.Provider + ", " + rt.Region + ", " + rt.StateName() + ")",
				Link: "/console/routes/" + rt.ID})
		}
	}
	v.Live = c.live(r, s, "Live: this model", adminapi.SeriesModel, id)
	c.renderDetail(w, r, s, "catalogue", v)
}

// routePage is a route's page: where it goes, and its live view (the requests it answered).
func (c *Console) routePage(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	v := detailView{Kind: "Route", ID: id, Missing: "Not in the catalogue (its series stay until retention deletes them)."}
	for _, m := range c.models(r, s) {
		for _, rt := range m.Routes {
			if rt.ID != id {
				continue
			}
			v.Missing = ""
			v.Facts = []fact{{Label: "Model", Value: rt.Model, Link: "/console/models/" + rt.Model},
				{Label: "Provider", Value: rt.Provider}, {Label: "Region", Value: rt.Region + " (" + rt.Country + ")"},
				{Label: "Priority", Value: strconv.Itoa(rt.Priority)}, {Label: "Weight", Value: strconv.Itoa(rt.Weight)},
				{Label: "State", Value: rt.StateName()}}
		}
	}
	v.Live = c.live(r, s, "Live: requests this route answered", adminapi.SeriesRoute, id)
	c.renderDetail(w, r, s, "catalogue", v)
}

// nodePage is a data-plane node's page: what it last reported, and its live view (the
// records it sent).
func (c *Console) nodePage(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	v := detailView{Kind: "Node", ID: id, Missing: "This node has not polled this control plane."}
	var l adminapi.List[adminapi.Node]
	c.api(r, s, http.MethodGet, "/admin/v1/nodes", nil, &l)
	for _, n := range l.Data {
		if n.NodeID != id {
			continue
		}
		v.Missing = ""
		region := n.Region
		if region == "" {
			region = "—"
		}
		v.Facts = []fact{{Label: "Region", Value: region}, {Label: "Applied snapshot", Value: strconv.FormatInt(n.AppliedVersion, 10)},
			{Label: "Last seen", Value: n.LastSeen.UTC().Format("2006-01-02 15:04:05 UTC")},
			{Label: "Spool age", Value: strconv.FormatInt(n.SpoolAgeMs, 10) + " ms"}}
	}
	v.Live = c.live(r, s, "Live: requests this node served", adminapi.SeriesNode, id)
	c.renderDetail(w, r, s, "nodes", v)
}
