package simulator

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The demo catalogue that `make run` loads points every route at this simulator's default
// address, and the simulator lists every demo model.
func TestDemoCatalogServedBySimulator(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "configs", "catalog.demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cat struct {
		Models []struct {
			ID       string
			Endpoint string
			Routes   []struct {
				BaseURL   string   `yaml:"base_url"`
				Protocols []string `yaml:"protocols"`
			}
		}
	}
	if err := yaml.Unmarshal(src, &cat); err != nil {
		t.Fatal(err)
	}
	s := New(Config{})
	endpoints := map[string]bool{}
	for _, m := range cat.Models {
		if !slices.Contains(DefaultModels, m.ID) {
			t.Errorf("demo model %s is not in DefaultModels", m.ID)
		}
		for _, r := range m.Routes {
			if d, _, _ := dialectPath(strings.TrimPrefix(r.BaseURL, "http://127.0.0.1:8090") + "/x"); r.BaseURL != "http://127.0.0.1:8090/v1" &&
				r.BaseURL != "http://127.0.0.1:8090/"+d+"/v1" {
				t.Errorf("%s: base_url %s is not the simulator's default address or one of its dialects", m.ID, r.BaseURL)
			}
			for _, p := range r.Protocols {
				endpoints[p] = true
				if idx, h := s.route(p); h == nil || idx == pathModels {
					t.Errorf("%s: the simulator does not serve %s", m.ID, p)
				}
			}
		}
	}
	for _, p := range []string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses", "/v1/messages", "/v1/systemone"} {
		if !endpoints[p] {
			t.Errorf("no demo route speaks %s", p)
		}
	}
}
