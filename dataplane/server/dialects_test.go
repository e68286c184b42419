package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/dialect"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/memmeter"
	"github.com/sekgate/gateway/dataplane/outcome"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/apikey"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

// streamCutError is the error envelope a chat stream cut before its [DONE] ends with.
var streamCutError = apierror.New(502, apierror.TypeUpstream, apierror.CodeProviderError,
	"the provider's stream ended before its last event; the output is incomplete").JSON(false)

// dialectGateway is a data-plane server in front of the simulator's dialects: model
// "dl-<dialect>" has one route, to that dialect, naming its server, translating Messages
// and Responses; the vLLM route asks for running usage.
type dialectGateway struct {
	URL, Key string
	Meter    *memmeter.Meter
	Sim      *simulator.Server
}

func dialectModel(d string) string { return "dl-" + d }

func startDialectGateway(t testing.TB) *dialectGateway {
	t.Helper()
	sm := simulator.New(simulator.Config{Name: "dl", Now: func() time.Time { return time.Unix(1700000000, 0) }})
	if err := sm.Start(context.Background(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sm.Close() })
	id, secret, hash, err := apikey.New()
	if err != nil {
		t.Fatal(err)
	}
	const acct = "acct_000000000000d1a1"
	c := snapshot.Content{Keys: []snapshot.Key{{ID: id, AccountID: acct, Hash: hash}},
		Balances: []snapshot.Balance{{AccountID: acct, MicroSEK: 100_000_000}}, BalanceSeq: 1}
	var models []string
	for _, d := range simulator.Dialects {
		m := dialectModel(d)
		models = append(models, m)
		c.Models = append(c.Models, snapshot.Model{ID: m, Aliases: []string{}, Endpoint: snapshot.EndpointChat, Created: 1700000000,
			InputOrePerMillion: pInOre, OutputOrePerMillion: pOutOre})
		c.Routes = append(c.Routes, snapshot.Route{ID: "rt_" + d, Model: m, Provider: "sim-" + d, BaseURL: sm.DialectBaseURL(d),
			Server: d, Protocols: []string{snapshot.EndpointChat}, Translate: true, ContinuousUsageStats: d == simulator.DialectVLLM,
			Region: "se-sto-1", Country: "SE", Weight: 1})
	}
	c.Accounts = []snapshot.Account{{ID: acct, Customer: "Dialect AB", Residency: "se", Models: models}}
	snap := &snapshot.Snapshot{Version: 1, GeneratedAt: time.Unix(1700000000, 0), Content: c}
	x, err := index.Build(snap)
	if err != nil {
		t.Fatal(err)
	}
	st := &index.Store{}
	st.Swap(x)
	g := &dialectGateway{Key: secret, Meter: memmeter.New(0), Sim: sm}
	g.Meter.SeedBalances(c.Balances, c.BalanceSeq)
	srv, err := New(Config{Store: st, Meter: g.Meter, Pool: proxy.NewPool(proxy.Config{FirstByteTimeout: 2 * time.Second})})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	g.URL = "http://" + ln.Addr().String()
	return g
}

// hasReasoning reports whether dialect d streams reasoning in a member of its own.
func hasReasoning(d string) bool { return d != simulator.DialectTGI && d != simulator.DialectOpenAI }

// TestOverflowNeverFailsOver: a prompt over the context window is refused by every route,
// so the first route's refusal (here TGI's, inside a 200 stream, and vLLM's 400) is the
// client's 400 with the server's words; the next route is not tried.
func TestOverflowNeverFailsOver(t *testing.T) {
	for _, d := range []string{simulator.DialectTGI, simulator.DialectVLLM, simulator.DialectLlamaCpp} {
		t.Run(d, func(t *testing.T) {
			first := startSim(t, "first", simulator.Knobs{})
			next := startSim(t, "next", simulator.Knobs{})
			r1 := chatRoute("a", "first", first.DialectBaseURL(d), "SE", 0, 1)
			r1.Server = d
			g := startSimGateway(t, []snapshot.Route{r1, chatRoute("b", "next", next.DialectBaseURL(d), "SE", 1, 1)})
			for i, body := range []string{
				`{"model":"llama8b","messages":[{"role":"user","content":"hej scenario:overflow"}],"stream":true}`,
				`{"model":"llama8b","messages":[{"role":"user","content":"hej scenario:overflow"}]}`,
			} {
				r := g.post(t, g.Keys.SE, body)
				if r.Status != 400 || !strings.Contains(r.Body, `"code":"provider_rejected"`) ||
					!strings.Contains(r.Body, "the provider refused the request: ") || !strings.Contains(r.Body, "4096") {
					t.Errorf("%d %s", r.Status, r.Body)
				}
				rec := g.record(t, i+1)
				if rec.Result != usage.ResultRejected || rec.Status != 400 || rec.PriceMicroSEK != 0 || len(rec.Routing.Attempts) != 1 {
					t.Errorf("record %+v", rec)
				}
			}
			if n := next.Stats().Requests; n != 0 {
				t.Errorf("failed over to the next route (%d requests)", n)
			}
		})
	}
}

// TestDialectLearned: a route that names no server is read with the lenient default
// table; once an answer shows its server (SGLang's matched_stop), later requests use that
// server's switches: a Messages-style "thinking: disabled" then reaches SGLang as
// chat_template_kwargs.enable_thinking false.
func TestDialectLearned(t *testing.T) {
	sim := startSim(t, "sg", simulator.Knobs{})
	r := chatRoute("a", "sg", sim.DialectBaseURL(simulator.DialectSGLang), "SE", 0, 1)
	r.Translate = true
	g := startSimGateway(t, []snapshot.Route{r})
	messages := func() string {
		req, _ := http.NewRequest("POST", g.URL+"/v1/messages", strings.NewReader(`{"model":"llama8b","max_tokens":100,`+
			`"thinking":{"type":"disabled"},"messages":[{"role":"user","content":"hej scenario:reasoning"}]}`))
		req.Header.Set("Authorization", "Bearer "+g.Keys.SE)
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		return string(b)
	}
	if b := messages(); !strings.Contains(b, `"type":"thinking"`) || !strings.Contains(b, `"stop_reason":"end_turn"`) {
		t.Fatalf("before the server is known, thinking cannot be switched off: %s", b)
	}
	if b := messages(); strings.Contains(b, `"type":"thinking"`) {
		t.Fatalf("the first answer's matched_stop named SGLang; its switch was not used: %s", b)
	}
	// A stream's chunks teach it too.
	g = startSimGateway(t, []snapshot.Route{r})
	if res := g.post(t, g.Keys.SE, `{"model":"llama8b","messages":[{"role":"user","content":"hej"}],"stream":true}`); res.Status != 200 {
		t.Fatalf("%d %s", res.Status, res.Body)
	}
	g.record(t, 1) // the stream has ended
	if b := messages(); strings.Contains(b, `"type":"thinking"`) {
		t.Fatalf("the stream's matched_stop named SGLang; its switch was not used: %s", b)
	}
}

// TestReportedStatus: what an error a server reported inside its stream stands for.
func TestReportedStatus(t *testing.T) {
	for _, c := range []struct {
		info dialect.Error
		want int
	}{
		{dialect.Error{Status: 422, Message: "Input validation error: `inputs` must have less than 4096 tokens"}, 422},
		{dialect.Error{Status: 422, Message: "Request failed during generation: CUDA out of memory"}, 500}, // TGI's blanket 422
		{dialect.Error{Status: 400, Message: "x", Overflow: true}, 400},
		{dialect.Error{Message: "x", Type: "BadRequestError"}, 400},
		{dialect.Error{Message: "model runner stopped", Type: "api_error"}, 500},
		{dialect.Error{Status: 429, Message: "busy"}, 429},
	} {
		if got := outcome.ReportedStatus(c.info); got != c.want {
			t.Errorf("%+v: %d, want %d", c.info, got, c.want)
		}
	}
}

// TestStalledErrorBody: a server that answers a stream request with a failed status and
// then stalls its body does not hold the request: the client gets the refusal.
func TestStalledErrorBody(t *testing.T) {
	defer func(d time.Duration) { outcome.ErrorReadWait = d }(outcome.ErrorReadWait)
	outcome.ErrorReadWait = 100 * time.Millisecond
	release := make(chan struct{})
	defer close(release)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		_, _ = io.WriteString(w, `{"error":{"message":"too lo`)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer up.Close()
	g := startSimGateway(t, []snapshot.Route{chatRoute("a", "stall", up.URL+"/v1", "SE", 0, 1)})
	r := g.post(t, g.Keys.SE, `{"model":"llama8b","messages":[{"role":"user","content":"hej"}],"stream":true}`)
	if r.Status != 400 || !strings.Contains(r.Body, `"code":"provider_rejected"`) {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
}
