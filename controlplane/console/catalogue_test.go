package console_test

import (
	"bytes"
	"html"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

var regexpTextarea = regexp.MustCompile(`(?s)<textarea name="catalogue" hidden>(.*?)</textarea>`)

// adminBrowser creates an admin operator and returns a browser logged in as it, with its
// CSRF token.
func adminBrowser(t *testing.T, srvURL string, login func(*http.Client) string) (*http.Client, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", srvURL+"/admin/v1/operators", strings.NewReader(`{"name":"ada","role":"admin","password":"ada's long password"}`))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 201 {
		t.Fatalf("create admin: %v %v", res, err)
	}
	adm := browser(t)
	adm.Jar = insecureJar{jar: adm.Jar}
	return adm, login(adm)
}

// upload posts a catalogue file to the preview as the load form does.
func upload(t *testing.T, c *http.Client, u, csrf, name, content string) string {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	mw.WriteField("csrf", csrf)
	fw, _ := mw.CreateFormFile("file", name)
	io.WriteString(fw, content)
	mw.Close()
	res, err := c.Post(u, mw.FormDataContentType(), &b)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	page, _ := io.ReadAll(res.Body)
	return html.UnescapeString(string(page))
}

// A catalogue that cannot be loaded is refused with its format, its file's name and the
// line and column of the problem.
func TestConsoleCatalogueErrors(t *testing.T) {
	srv, _ := newConsole(t)
	adm, csrf := adminBrowser(t, srv.URL, func(c *http.Client) string { return loginAs(t, srv, c, "ada", "ada's long password") })
	preview := srv.URL + "/console/catalogue/preview"
	tests := []struct {
		name, file, content, want string
	}{
		{"YAML typo", "cat.yaml", "models:\n  - id: m\n    input_ore_per_milion_tokens: 1\n",
			`The YAML catalogue file cat.yaml cannot be loaded: line 3, column 5: models[0]: unknown field "input_ore_per_milion_tokens" in model; did you mean "input_ore_per_million_tokens"?`},
		{"JSON wrong type", "cat.json", "{\"models\": [\n {\"id\": \"m\", \"context_tokens\": \"8k\"}]}",
			`The JSON catalogue file cat.json cannot be loaded: line 2, column 32: models[0].context_tokens: must be an integer, got "8k"`},
		{"JSON syntax", "cat.json", "{\"models\": [\n {\"id\" \"m\"}]}",
			`The JSON catalogue file cat.json cannot be loaded: line 2, column 8: malformed catalogue JSON: invalid character '"' after object key`},
		{"YAML syntax", "cat.yml", "models:\n  - id: m\n    endpoint: x: y\n",
			`The YAML catalogue file cat.yml cannot be loaded: line 3: malformed catalogue YAML: mapping values are not allowed in this context`},
		{"invalid value", "c.yaml", "models:\n  - id: m\n    endpoint: /v1/images\n",
			`The YAML catalogue file c.yaml cannot be loaded: line 3, column 15: models[0].endpoint: unknown endpoint "/v1/images"`},
		{"no file", "empty.yaml", "", `Choose a catalogue file (YAML or JSON).`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if page := upload(t, adm, preview, csrf, tt.file, tt.content); !strings.Contains(page, tt.want) {
				t.Fatalf("page without %q:\n%.3000s", tt.want, page)
			}
		})
	}
	// Pasted text has no file name.
	_, page := post(t, adm, preview, url.Values{"csrf": {csrf}, "catalogue": {"{\"models\": [{\"id\": \"m\", \"ID\": \"n\"}]}"}})
	if want := `The JSON catalogue cannot be loaded: line 1, column 25: models[0]: unknown field "ID" in model; did you mean "id"?`; !strings.Contains(html.UnescapeString(page), want) {
		t.Fatalf("pasted JSON: page without %q:\n%.3000s", want, page)
	}
}

// The catalogue page links its export, which the load form takes back unchanged.
func TestConsoleCatalogueExport(t *testing.T) {
	srv, st := newConsole(t)
	adm, csrf := adminBrowser(t, srv.URL, func(c *http.Client) string { return loginAs(t, srv, c, "ada", "ada's long password") })
	res, _ := post(t, adm, srv.URL+"/console/catalogue/preview", url.Values{"csrf": {csrf}, "catalogue": {catalogueYAML}})
	if res.StatusCode != 200 {
		t.Fatalf("preview %d", res.StatusCode)
	}
	_, page := post(t, adm, srv.URL+"/console/catalogue/preview", url.Values{"csrf": {csrf}, "catalogue": {catalogueYAML}})
	applied := html.UnescapeString(regexpTextarea.FindStringSubmatch(page)[1])
	res, _ = post(t, adm, srv.URL+"/console/catalogue/apply", url.Values{"csrf": {csrf}, "catalogue": {applied}})
	if loc, page := followed(t, adm, srv.URL, res); !strings.Contains(page, "Catalogue loaded") {
		t.Fatalf("apply: %s", loc)
	}
	// A viewer of the page (an operator) is offered the download too.
	op := browser(t)
	op.Jar = insecureJar{jar: op.Jar}
	login(t, srv, op)
	if _, page := get(t, op, srv.URL+"/console/catalogue"); !strings.Contains(page, `href="/console/catalogue/export?format=yaml"`) ||
		!strings.Contains(page, `href="/console/catalogue/export?format=json"`) {
		t.Fatalf("no export links: %.3000s", page)
	}
	for _, tt := range []struct{ format, ctype, name, starts string }{
		{"yaml", "application/yaml; charset=utf-8", "catalog.yaml", "# Model catalogue"},
		{"json", "application/json; charset=utf-8", "catalog.json", "{"},
	} {
		res, body := get(t, op, srv.URL+"/console/catalogue/export?format="+tt.format)
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != tt.ctype ||
			res.Header.Get("Content-Disposition") != `attachment; filename="`+tt.name+`"` || !strings.HasPrefix(body, tt.starts) || !strings.Contains(body, "tiny-se") {
			t.Fatalf("export %s: %d %v\n%s", tt.format, res.StatusCode, res.Header, body)
		}
		if page := upload(t, adm, srv.URL+"/console/catalogue/preview", csrf, tt.name, body); !strings.Contains(page, "0 model(s) would change") {
			t.Fatalf("export %s does not load back unchanged: %.3000s", tt.format, page)
		}
	}
	if models, _ := st.ListModels(t.Context()); len(models) != 1 {
		t.Fatalf("%d models", len(models))
	}
}
