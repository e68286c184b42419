package openapi

import (
	"strings"
	"testing"
)

func TestHTML(t *testing.T) {
	page, err := HTML(`https://api.example.com/"<x>`)
	if err != nil {
		t.Fatal(err)
	}
	p := string(page)
	for _, want := range []string{
		"<h1>Gateway inference service</h1>",
		`<span class="m">POST</span> <code>/v1/chat/completions</code> — Chat completion`,
		`<code>/v1/service/signup</code> — Access request form <span class="s">(no key)</span>`,
		"https://api.example.com/&#34;&lt;x&gt;/v1", // the base URL is escaped
		`<h2 id="Unsupported">`,
	} {
		if !strings.Contains(p, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, banned := range []string{"<script", "Allowed methods", "Headers of ", "Not allowed", `"<x>`} {
		if strings.Contains(p, banned) {
			t.Errorf("page holds %q", banned)
		}
	}
	again, _ := HTML(`https://api.example.com/"<x>`)
	if &again[0] != &page[0] {
		t.Error("the page for one base URL is rendered on each call")
	}
}
