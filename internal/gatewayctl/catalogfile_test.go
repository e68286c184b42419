package gatewayctl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const loadableCatalog = "models:\n  - id: m\n    endpoint: /v1/chat/completions\n    routes:\n" +
	"      - id: r\n        provider: vllm\n        base_url: http://127.0.0.1:8090/v1\n        region: se-sto\n        country: SE\n        weight: 1\n"

// Warnings are printed and leave the exit status 0, unless --strict asks them to fail.
func TestCatalogLoadStrict(t *testing.T) {
	f, srv := newFakeAdmin(t)
	warned := `{"models":1,"routes":1,"warnings":["route r: credential_missing on node-a"]}`
	f.on("PUT", "/admin/v1/catalog", 200, warned)
	file := filepath.Join(t.TempDir(), "cat.yaml")
	os.WriteFile(file, []byte(loadableCatalog), 0o600)
	tests := []struct {
		name    string
		args    []string
		answer  string
		code    int
		query   string
		wantOut string
		wantErr string
	}{
		{"warnings without strict", []string{"catalog", "load", file}, warned, 0, "",
			"Loaded catalogue " + file + ": 1 models, 1 routes\nwarning: route r: credential_missing on node-a\n", ""},
		{"warnings with strict", []string{"catalog", "load", "--strict", file}, warned, 1, "",
			"Loaded catalogue " + file + ": 1 models, 1 routes\nwarning: route r: credential_missing on node-a\n",
			"gatewayctl: catalogue " + file + ": 1 warnings, refused by --strict\n"},
		{"strict dry run", []string{"catalog", "load", "--strict", "--dry-run", file}, warned, 1, "dry_run=true",
			"Checked (nothing loaded) catalogue " + file + ": 1 models, 1 routes\nwarning: route r: credential_missing on node-a\n",
			"gatewayctl: catalogue " + file + ": 1 warnings, refused by --strict\n"},
		{"strict without warnings", []string{"catalog", "load", "--strict", file}, `{"models":1,"routes":1}`, 0, "",
			"Loaded catalogue " + file + ": 1 models, 1 routes\n", ""},
		{"strict with --json", []string{"--json", "catalog", "load", "--strict", file}, warned, 1, "", "", "refused by --strict"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.on("PUT", "/admin/v1/catalog", 200, tt.answer)
			before := len(f.got)
			code, out, errOut := runCLI(t, srv, tt.args...)
			if code != tt.code || (tt.wantOut != "" && out != tt.wantOut) || !strings.Contains(errOut, tt.wantErr) || (tt.wantErr == "" && errOut != "") {
				t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
			}
			if len(f.got) != before+1 {
				t.Fatalf("%d requests sent", len(f.got)-before)
			}
			if q := f.query(len(f.got) - 1); q != tt.query {
				t.Errorf("query %q, want %q", q, tt.query)
			}
		})
	}
}

const exportedJSON = `{"models":[{"id":"llama","aliases":["meta/llama","true"],"endpoint":"/v1/chat/completions","created":1721692800,` +
	`"context_tokens":131072,"input_ore_per_million_tokens":150,"output_ore_per_million_tokens":300,"cache_isolation":"shared","routes":[` +
	`{"id":"se-1","model":"llama","provider":"vllm","base_url":"http://127.0.0.1:8090/v1","credentials_ref":"env:GATEWAY_CREDENTIAL_SIM",` +
	`"protocols":["/v1/chat/completions"],"translate":true,"region":"0123","country":"SE","priority":1,"weight":100,"allow_extensions":["prompt_embeds"]}]},` +
	`{"id":"embed","aliases":[],"endpoint":"/v1/embeddings","created":0,"input_ore_per_million_tokens":10,"output_ore_per_million_tokens":0,"routes":[]}]}`

// An export, in either format, loads back as the same catalogue.
func TestCatalogExportRoundTrip(t *testing.T) {
	f, srv := newFakeAdmin(t)
	f.on("GET", "/admin/v1/catalog", 200, exportedJSON)
	f.on("PUT", "/admin/v1/catalog", 200, `{"models":2,"routes":1}`)
	var want any
	if err := json.Unmarshal([]byte(exportedJSON), &want); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"yaml", "json"} {
		t.Run(format, func(t *testing.T) {
			code, out, errOut := runCLI(t, srv, "catalog", "export", "--format", format)
			if code != 0 || errOut != "" {
				t.Fatalf("export: exit %d %q", code, errOut)
			}
			if format == "yaml" && (!strings.HasPrefix(out, "# Model catalogue") || !strings.Contains(out, "\n  - id: llama\n")) {
				t.Errorf("YAML export:\n%s", out)
			}
			file := filepath.Join(t.TempDir(), "export."+format)
			os.WriteFile(file, []byte(out), 0o600)
			if code, _, errOut := runCLI(t, srv, "catalog", "load", file); code != 0 {
				t.Fatalf("load of the export: exit %d %q\n%s", code, errOut, out)
			}
			var sent any
			if err := json.Unmarshal([]byte(f.got[len(f.got)-1].body), &sent); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(sent, want) {
				t.Errorf("loaded\n %s\nexported\n %s", f.got[len(f.got)-1].body, exportedJSON)
			}
		})
	}
	if code, _, errOut := runCLI(t, srv, "catalog", "export", "--format", "toml"); code == 0 || errOut != "gatewayctl: --format \"toml\": want yaml or json\n" {
		t.Errorf("bad format: exit %d %q", code, errOut)
	}
}
