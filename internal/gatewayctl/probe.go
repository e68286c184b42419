package gatewayctl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/dialect"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Probe is what `routes probe` found about a route's server, from a few tiny requests sent
// straight to it (not through the gateway).
type Probe struct {
	Route    string `json:"route"`
	BaseURL  string `json:"base_url"`
	Declared string `json:"declared_server"`
	// Detected is the server the answers look like (dialect names), with the signs seen.
	Detected string   `json:"detected_server"`
	Signs    []string `json:"signs"`
	Models   []string `json:"models"`
	// Window is the context window the server reports (0: not reported).
	Window int64 `json:"context_window"`
	// Usage: in a whole answer, in a stream without include_usage (chunks carrying usage),
	// and with it (whether a final usage chunk came).
	UsageWhole       bool     `json:"usage_in_answer"`
	UsageUnasked     int      `json:"stream_usage_chunks_unasked"`
	UsageFinal       bool     `json:"stream_final_usage_when_asked"`
	StreamEndsDone   bool     `json:"stream_ends_with_done"`
	ToolCalls        bool     `json:"tool_calls"`
	ReasoningMembers []string `json:"reasoning_members"`
	// Overflow is how the server refused a prompt over its window: status, whether inside a
	// 200 stream, its message, and whether the gateway recognises it as an overflow.
	OverflowStatus  int      `json:"overflow_status"`
	OverflowMessage string   `json:"overflow_message"`
	OverflowKnown   bool     `json:"overflow_recognised"`
	Warnings        []string `json:"warnings"`
}

// prober sends the probe's requests.
type prober struct {
	hc    *http.Client
	base  string // scheme://host[:port] + path prefix
	token string
	model string
	p     *Probe
}

// ProbeRoute probes route r's server; token is its credential ("" for none), model the
// catalogue's context window for r's model (0: unknown).
func ProbeRoute(ctx context.Context, hc *http.Client, r snapshot.Route, token string, contextTokens int64) (*Probe, error) {
	b, err := snapshot.ParseBaseURL(r.BaseURL)
	if err != nil {
		return nil, err
	}
	scheme := "http://"
	if b.TLS {
		scheme = "https://"
	}
	model := r.UpstreamModel
	if model == "" {
		model = r.Model
	}
	declared := r.Server
	if declared == "" {
		declared = "openai"
	}
	pr := &prober{hc: hc, base: scheme + b.Host + b.PathPrefix, token: token, model: model,
		p: &Probe{Route: r.ID, BaseURL: r.BaseURL, Declared: declared}}
	p := pr.p
	if err := pr.models(ctx); err != nil {
		return nil, err
	}
	if _, body, err := pr.post(ctx, "/v1/chat/completions", pr.chat(false, false, "Say hi.", false)); err == nil {
		pr.answer(body)
	} else {
		p.warn("chat completions: %v", err)
	}
	pr.stream(ctx, false)
	pr.stream(ctx, true)
	if _, body, err := pr.post(ctx, "/v1/chat/completions", pr.chat(false, false, "What is the weather in Stockholm?", true)); err == nil {
		p.ToolCalls = gjson.GetBytes(body, "choices.0.message.tool_calls.0.function.name").Str != ""
	}
	pr.overflow(ctx, contextTokens)
	for _, proto := range r.Protocols {
		if proto == snapshot.EndpointChat {
			continue
		}
		if st, _, err := pr.post(ctx, proto, []byte(`{}`)); err == nil && (st == 404 || st == 405) {
			p.warn("the route lists %s, but the server answers it %d", proto, st)
		}
	}
	pr.detect()
	if p.Detected != p.Declared {
		p.warn("the route declares server %s, but the answers look like %s: set server: %s", p.Declared, p.Detected, p.Detected)
	}
	if len(p.Models) > 0 && !slices.Contains(p.Models, model) {
		p.warn("the server does not list model %q (it lists %s)", model, strings.Join(p.Models, ", "))
	}
	if p.Window > 0 && contextTokens > 0 && p.Window != contextTokens {
		p.warn("the catalogue's context_tokens is %d, the server's window is %d", contextTokens, p.Window)
	}
	if !p.UsageFinal && !p.UsageWhole {
		p.warn("the server reports no usage: streams are charged from estimates")
	}
	if p.OverflowStatus != 0 && !p.OverflowKnown {
		p.warn("the server's refusal of an over-long prompt is not recognised as a context overflow: %q", p.OverflowMessage)
	}
	return p, nil
}

func (p *Probe) warn(format string, a ...any) {
	p.Warnings = append(p.Warnings, fmt.Sprintf(format, a...))
}

func (pr *prober) chat(stream, includeUsage bool, prompt string, tool bool) []byte {
	req := map[string]any{"model": pr.model, "max_tokens": 8, "stream": stream,
		"messages": []map[string]string{{"role": "user", "content": prompt}}}
	if includeUsage {
		req["stream_options"] = map[string]bool{"include_usage": true}
	}
	if tool {
		req["max_tokens"] = 64
		req["tool_choice"] = "required"
		req["tools"] = []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]string{"type": "string"}}}}}}
	}
	b, _ := json.Marshal(req)
	return b
}

func (pr *prober) do(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, pr.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if pr.token != "" {
		req.Header.Set("Authorization", "Bearer "+pr.token)
	}
	return pr.hc.Do(req)
}

// post sends body to path and returns the status and (up to 1 MiB of) the answer.
func (pr *prober) post(ctx context.Context, path string, body []byte) (int, []byte, error) {
	resp, err := pr.do(ctx, http.MethodPost, path, body)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}

// models reads the model list and the window the server reports (vLLM and SGLang
// max_model_len, llama.cpp meta.n_ctx_train).
func (pr *prober) models(ctx context.Context) error {
	resp, err := pr.do(ctx, http.MethodGet, "/v1/models", nil)
	if err != nil {
		return fmt.Errorf("probe %s: %w", pr.base, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != 200 {
		pr.p.warn("GET /v1/models answered %d", resp.StatusCode)
		return nil
	}
	gjson.GetBytes(b, "data").ForEach(func(_, m gjson.Result) bool {
		pr.p.Models = append(pr.p.Models, m.Get("id").Str)
		for _, f := range []string{"max_model_len", "meta.n_ctx_train", "context_length"} {
			if w := m.Get(f).Int(); w > 0 && pr.p.Window == 0 {
				pr.p.Window = w
			}
		}
		if o := m.Get("owned_by").Str; o != "" {
			pr.p.Signs = append(pr.p.Signs, "owned_by="+o)
		}
		return true
	})
	return nil
}

// answer reads a whole chat answer's signs: usage, reasoning members, stop-string members,
// fingerprint, llama.cpp's timings.
func (pr *prober) answer(b []byte) {
	root := gjson.ParseBytes(b)
	pr.p.UsageWhole = root.Get("usage.prompt_tokens").Exists()
	pr.signs(root, root.Get("choices.0"), root.Get("choices.0.message"))
}

func (pr *prober) signs(root, choice, msg gjson.Result) {
	p := pr.p
	for _, f := range []string{"reasoning", "reasoning_content"} {
		if msg.Get(f).Exists() && !slices.Contains(p.ReasoningMembers, f) {
			p.ReasoningMembers = append(p.ReasoningMembers, f)
		}
	}
	for _, f := range []string{"matched_stop", "stop_reason"} {
		if choice.Get(f).Exists() {
			p.addSign(f)
		}
	}
	if fp := root.Get("system_fingerprint").Str; fp != "" {
		p.addSign("system_fingerprint=" + fp)
	}
	if root.Get("timings").Exists() {
		p.addSign("timings")
	}
	if root.Get("usage").Type == gjson.Null {
		p.addSign("usage=null")
	}
}

func (p *Probe) addSign(s string) {
	if !slices.Contains(p.Signs, s) {
		p.Signs = append(p.Signs, s)
	}
}

// stream reads a streamed answer, with or without include_usage.
func (pr *prober) stream(ctx context.Context, includeUsage bool) {
	resp, err := pr.do(ctx, http.MethodPost, "/v1/chat/completions", pr.chat(true, includeUsage, "Say hi.", false))
	if err != nil {
		pr.p.warn("streamed chat completions: %v", err)
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 1<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	usage, final := 0, false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			pr.p.StreamEndsDone = true
			continue
		}
		root := gjson.Parse(data)
		if u := root.Get("usage"); u.IsObject() {
			usage++
			final = len(root.Get("choices").Array()) == 0 || root.Get("choices.0.finish_reason").Type == gjson.String
		}
		pr.signs(root, root.Get("choices.0"), root.Get("choices.0.delta"))
	}
	if includeUsage {
		pr.p.UsageFinal = final
	} else {
		pr.p.UsageUnasked = usage
	}
}

// overflow sends a prompt over the window (the server's, else the catalogue's, else 128k
// tokens) and reads the refusal.
func (pr *prober) overflow(ctx context.Context, contextTokens int64) {
	window := pr.p.Window
	if window == 0 {
		window = contextTokens
	}
	if window <= 0 || window > 1<<20 {
		window = 128 << 10
	}
	prompt := strings.Repeat("hej ", int(window+window/4))
	st, b, err := pr.post(ctx, "/v1/chat/completions", pr.chat(true, false, prompt, false))
	if err != nil {
		pr.p.warn("over-long prompt: %v", err)
		return
	}
	pr.p.OverflowStatus = st
	if st == 200 {
		// Only an error inside the stream is a refusal (TGI).
		for _, line := range strings.Split(string(b), "\n") {
			if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data:"); ok && strings.Contains(data, `"error"`) {
				b = []byte(strings.TrimSpace(data))
				pr.p.addSign("error inside a 200 stream")
				break
			}
		}
	}
	if e, ok := dialect.ReadError(b); ok {
		pr.p.OverflowMessage, pr.p.OverflowKnown = e.Message, e.Overflow
		if gjson.GetBytes(b, "object").Str == "error" {
			pr.p.addSign(`error object "error"`)
		}
		if gjson.GetBytes(b, "error.n_ctx").Exists() {
			pr.p.addSign("error n_ctx")
		}
		if gjson.GetBytes(b, "error.http_status_code").Exists() || gjson.GetBytes(b, "error_type").Exists() {
			pr.p.addSign("error http_status_code/error_type")
		}
	} else if st == 200 {
		pr.p.OverflowStatus = 0
		pr.p.warn("a prompt over the window was answered: the server may truncate prompts")
	}
}

// detect names the server the signs point to.
func (pr *prober) detect() {
	p := pr.p
	has := func(prefix string) bool {
		for _, s := range p.Signs {
			if strings.HasPrefix(s, prefix) {
				return true
			}
		}
		return false
	}
	fp := ""
	for _, s := range p.Signs {
		if v, ok := strings.CutPrefix(s, "system_fingerprint="); ok {
			fp = v
		}
	}
	switch {
	case has("matched_stop") || has("owned_by=sglang") || has(`error object "error"`) && !has("stop_reason"):
		p.Detected = dialect.SGLang.String()
	case has("stop_reason") || has("owned_by=vllm"):
		p.Detected = dialect.VLLM.String()
	case has("timings") || has("owned_by=llamacpp") || has("error n_ctx"):
		p.Detected = dialect.LlamaCpp.String()
	case strings.HasSuffix(fp, "-native") || has("error http_status_code"):
		p.Detected = dialect.TGI.String()
	case fp == "fp_ollama" || has("owned_by=library") || has("owned_by=ollama"):
		p.Detected = dialect.Ollama.String()
	default:
		p.Detected = dialect.OpenAI.String()
	}
}

// probeLines renders p for the table output.
func probeLines(p *Probe) []string {
	yes := func(b bool) string { return yesNo(b) }
	overflow := "-"
	if p.OverflowStatus != 0 {
		overflow = strconv.Itoa(p.OverflowStatus) + " " + p.OverflowMessage
	}
	d := dialect.Of(p.Detected)
	return []string{
		"Route", p.Route,
		"Base URL", p.BaseURL,
		"Server (declared)", p.Declared,
		"Server (detected)", p.Detected + " (" + list(p.Signs) + ")",
		"Models", list(p.Models),
		"Context window", orDash(strconv.FormatInt(p.Window, 10)),
		"Usage in answers", yes(p.UsageWhole),
		"Stream usage unasked", strconv.Itoa(p.UsageUnasked) + " chunks",
		"Stream usage asked", yes(p.UsageFinal),
		"Stream ends with [DONE]", yes(p.StreamEndsDone),
		"Tool calls", yes(p.ToolCalls),
		"Reasoning members", list(p.ReasoningMembers) + " (table: " + list(d.Reasoning) + ")",
		"Context overflow", overflow,
		"Overflow recognised", yes(p.OverflowKnown),
	}
}

// probeTimeout bounds each probe request.
const probeTimeout = 60 * time.Second
