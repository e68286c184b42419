package server

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/snapshot"
)

const (
	remoteImageReq = `{"model":"llama8b","max_tokens":4,"messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}}]}]}`
	dataImageReq   = `{"model":"llama8b","max_tokens":4,"messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]}`
	promptEmbedReq = `{"model":"llama8b","max_tokens":4,"messages":[{"role":"user","content":"x"}],"prompt_embeds":"UEsDBAAAAAA="}`
	bothReq        = `{"model":"llama8b","max_tokens":4,"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}}]}],"prompt_embeds":"AA"}`
	templateReq    = `{"model":"llama8b","max_tokens":4,"messages":[{"role":"user","content":"x"}],"chat_template_kwargs":{"chat_template":"{{ 7*7 }}"}}`
)

// TestValueOptInRouting: remote media and provider extensions narrow the eligible routes to
// those that allow them (priority order kept among those); when none does, the request is
// refused with 400 naming the param, before any upstream or the meter sees it.
func TestValueOptInRouting(t *testing.T) {
	plain := startSim(t, "plain", simulator.Knobs{})
	media := startSim(t, "media", simulator.Knobs{})
	ext := startSim(t, "ext", simulator.Knobs{})
	rPlain := chatRoute("rt_plain", "plain-se", plain.BaseURL(), "SE", 0, 1)
	rMedia := chatRoute("rt_media", "media-se", media.BaseURL(), "SE", 1, 1)
	rMedia.AllowRemoteMedia = true
	rExt := chatRoute("rt_ext", "ext-se", ext.BaseURL(), "SE", 2, 1)
	rExt.AllowExtensions = []string{snapshot.ExtPromptEmbeds}

	tests := []struct {
		name     string
		routes   []snapshot.Route
		body     string
		provider string // "" means refused
		param    string
	}{
		{"plain request takes the preferred route", []snapshot.Route{rPlain, rMedia, rExt}, chatPlainReq, "plain-se", ""},
		{"data: URL is not remote", []snapshot.Route{rPlain, rMedia}, dataImageReq, "plain-se", ""},
		{"remote media skips routes without the opt-in", []snapshot.Route{rPlain, rMedia, rExt}, remoteImageReq, "media-se", ""},
		{"extension skips routes without the opt-in", []snapshot.Route{rPlain, rMedia, rExt}, promptEmbedReq, "ext-se", ""},
		{"remote media refused without an opt-in route", []snapshot.Route{rPlain, rExt}, remoteImageReq, "", "messages[0].content[1].image_url.url"},
		{"extension refused without an opt-in route", []snapshot.Route{rPlain, rMedia}, promptEmbedReq, "", "prompt_embeds"},
		{"extension not in the route's list", []snapshot.Route{rPlain, rMedia, rExt}, templateReq, "", "chat_template_kwargs.chat_template"},
		{"both, allowed only on different routes", []snapshot.Route{rPlain, rMedia, rExt}, bothReq, "", "messages[0].content[0].image_url.url"},
		{"both, extension allowed nowhere", []snapshot.Route{rPlain, rMedia}, bothReq, "", "prompt_embeds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, s := range []*simulator.Server{plain, media, ext} {
				s.ResetStats()
			}
			g := startSimGateway(t, tt.routes)
			r := g.post(t, g.Keys.SE, tt.body)
			if tt.provider != "" {
				if r.Status != 200 || r.Header.Get("X-Service-Provider") != tt.provider {
					t.Fatalf("status %d provider %q, want 200 from %s: %s", r.Status, r.Header.Get("X-Service-Provider"), tt.provider, r.Body)
				}
				return
			}
			checkEnvelope(t, r, 400, "invalid_request_error")
			if p := gjson.Get(r.Body, "error.param").Str; p != tt.param {
				t.Fatalf("param %q, want %q: %s", p, tt.param, r.Body)
			}
			for _, s := range []*simulator.Server{plain, media, ext} {
				if n := s.Stats().Requests; n != 0 {
					t.Errorf("an upstream saw %d requests", n)
				}
			}
			if n := g.Meter.Count(); n != 0 {
				t.Errorf("%d usage records for a refused request", n)
			}
		})
	}
}

// TestValueOptInTranslated: the opt-in is the route's whatever protocol the client speaks;
// a Messages-style request reaching a chat route through translation is held to it too.
func TestValueOptInTranslated(t *testing.T) {
	up := startSim(t, "up", simulator.Knobs{})
	r := chatRoute("rt_tr", "tr-se", up.BaseURL(), "SE", 0, 1)
	r.Translate = true
	g := startSimGateway(t, []snapshot.Route{r})
	post := func(body string) result {
		req, _ := http.NewRequest("POST", g.URL+"/v1/messages", strings.NewReader(body))
		req.Header.Set("x-api-key", g.Keys.SE)
		req.Header.Set("Content-Type", "application/json")
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return result{resp.StatusCode, resp.Header, string(b)}
	}
	res := post(`{"model":"llama8b","max_tokens":4,"messages":[{"role":"user","content":"x"}],"kv_transfer_params":{"remote_host":"10.0.0.9"}}`)
	checkEnvelope(t, res, 400, "invalid_request_error")
	if p := gjson.Get(res.Body, "error.param").Str; p != "kv_transfer_params" {
		t.Fatalf("param %q: %s", p, res.Body)
	}
	if n := up.Stats().Requests; n != 0 {
		t.Fatalf("upstream saw %d requests", n)
	}
	if res := post(`{"model":"llama8b","max_tokens":4,"messages":[{"role":"user","content":"x"}]}`); res.Status != 200 {
		t.Fatalf("plain Messages request: %d %s", res.Status, res.Body)
	}
}
