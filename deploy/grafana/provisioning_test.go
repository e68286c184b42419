// Package grafana holds the gateway's Grafana dashboard and the provisioning files that
// load it; its test decodes them as Grafana would read them (Grafana is not needed).
package grafana

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// datasourceFile is Grafana's datasource provisioning file (apiVersion 1), the fields it
// takes; decoding with KnownFields refuses any other.
type datasourceFile struct {
	APIVersion  int `yaml:"apiVersion"`
	Datasources []struct {
		Name      string         `yaml:"name"`
		UID       string         `yaml:"uid"`
		Type      string         `yaml:"type"`
		Access    string         `yaml:"access"`
		URL       string         `yaml:"url"`
		IsDefault bool           `yaml:"isDefault"`
		Editable  bool           `yaml:"editable"`
		JSONData  map[string]any `yaml:"jsonData"`
	} `yaml:"datasources"`
}

// providerFile is Grafana's dashboard provider provisioning file (apiVersion 1).
type providerFile struct {
	APIVersion int `yaml:"apiVersion"`
	Providers  []struct {
		Name                  string `yaml:"name"`
		OrgID                 int    `yaml:"orgId"`
		Folder                string `yaml:"folder"`
		Type                  string `yaml:"type"`
		DisableDeletion       bool   `yaml:"disableDeletion"`
		AllowUIUpdates        bool   `yaml:"allowUiUpdates"`
		UpdateIntervalSeconds int    `yaml:"updateIntervalSeconds"`
		Options               struct {
			Path                      string `yaml:"path"`
			FoldersFromFilesStructure bool   `yaml:"foldersFromFilesStructure"`
		} `yaml:"options"`
	} `yaml:"providers"`
}

func decodeStrict(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// The provisioning files decode as Grafana's schema, provision a default Prometheus data
// source of the type the dashboard's data source variable asks for, and a file provider
// whose folder (the environment variable run-fleet sets to this folder) holds the
// dashboard.
func TestProvisioningLoadsTheDashboard(t *testing.T) {
	var ds datasourceFile
	decodeStrict(t, filepath.Join("provisioning", "datasources", "gateway.yaml"), &ds)
	if ds.APIVersion != 1 || len(ds.Datasources) != 1 {
		t.Fatalf("datasources %+v", ds)
	}
	d := ds.Datasources[0]
	if d.Type != "prometheus" || d.Access != "proxy" || !d.IsDefault || d.UID == "" || d.URL != "${GATEWAY_PROMETHEUS_URL}" {
		t.Errorf("data source %+v", d)
	}
	var pf providerFile
	decodeStrict(t, filepath.Join("provisioning", "dashboards", "gateway.yaml"), &pf)
	if pf.APIVersion != 1 || len(pf.Providers) != 1 {
		t.Fatalf("providers %+v", pf)
	}
	p := pf.Providers[0]
	if p.Type != "file" || p.Options.Path != "${GATEWAY_GRAFANA_DASHBOARDS}" || p.Folder == "" || p.OrgID != 1 {
		t.Errorf("provider %+v", p)
	}

	// The provider's folder (this one) holds the dashboard, whose data source variable
	// takes the provisioned type and whose panels read it through the variable.
	b, err := os.ReadFile("gateway.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID        string `json:"uid"`
		Title      string `json:"title"`
		Templating struct {
			List []struct{ Name, Type, Query string } `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title      string `json:"title"`
			Datasource *struct{ Type, UID string }
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	if dash.UID != "sekgate-gateway" || len(dash.Templating.List) == 0 {
		t.Fatalf("dashboard %q %q", dash.UID, dash.Title)
	}
	v := dash.Templating.List[0]
	if v.Type != "datasource" || v.Query != d.Type {
		t.Errorf("data source variable %+v, provisioned type %s", v, d.Type)
	}
	for _, pn := range dash.Panels {
		if pn.Datasource != nil && (pn.Datasource.Type != d.Type || pn.Datasource.UID != "${"+v.Name+"}") {
			t.Errorf("panel %q reads %+v", pn.Title, pn.Datasource)
		}
	}
	// Every JSON file in the folder is a dashboard Grafana will load: only gateway.json.
	js, _ := filepath.Glob("*.json")
	if len(js) != 1 || !strings.HasSuffix(js[0], "gateway.json") {
		t.Errorf("JSON files beside the dashboard: %v", js)
	}
}
