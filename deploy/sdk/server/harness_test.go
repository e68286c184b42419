// Package server_test runs the official SDKs (OpenAI, both Anthropic majors) against the
// data plane's server in front of the provider simulator: what a client built on them
// reads from the gateway, and what the gateway records and charges for it. The harness
// builds the server from its exported API, as a node does; the server's own tests keep the
// same harness inside the package.
package server_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/memmeter"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/reqparse"
	"github.com/sekgate/gateway/dataplane/server"
	"github.com/sekgate/gateway/dataplane/tokens"
	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/apikey"
	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

// serve builds a server on st and m and serves it on a random loopback port until the
// test ends; it returns the base URL.
func serve(t testing.TB, st *index.Store, m *memmeter.Meter) string {
	t.Helper()
	srv, err := server.New(server.Config{Store: st, Meter: m, Pool: proxy.NewPool(proxy.Config{FirstByteTimeout: 2 * time.Second})})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return "http://" + ln.Addr().String()
}

// startSim starts a provider simulator (knobs k, fixed clock) on a random loopback port.
func startSim(t testing.TB, name string, k simulator.Knobs) *simulator.Server {
	t.Helper()
	sm := simulator.New(simulator.Config{Name: name, Knobs: k, Now: func() time.Time { return time.Unix(1700000000, 0) }})
	if err := sm.Start(context.Background(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sm.Close() })
	return sm
}

// storeOf indexes snap into a new store.
func storeOf(t testing.TB, snap *snapshot.Snapshot) *index.Store {
	t.Helper()
	x, err := index.Build(snap)
	if err != nil {
		t.Fatal(err)
	}
	st := &index.Store{}
	st.Swap(x)
	return st
}

// awaitRecords waits until m holds n records, woken by each record, at most 5 s; it returns
// the records kept.
func awaitRecords(t testing.TB, m *memmeter.Meter, n int) []*usage.Record {
	t.Helper()
	if !m.WaitCount(n, 5*time.Second) {
		t.Fatalf("waited for %d records, have %d", n, m.Count())
	}
	return m.Records()
}

// The protocol tests run the gateway in front of the provider simulator with a catalogue of
// one model per way of serving the Messages-style and Responses-style protocols.
const (
	pmNative     = "sim-native" // one route speaking chat, messages and responses natively
	pmNativeUp   = "native-upstream-name"
	pmTranslated = "sim-chat"       // a chat-only route with translate=true
	pmTransAlias = "acme/sim-chat"  // alias with a slash
	pmChatOnly   = "sim-chat-plain" // a chat-only route without translation
	pmDecider    = "sim-decider"    // endpoint /v1/systemone
	pmHidden     = "sim-hidden"     // exists, not enabled for the account

	pAcct      = "acct_00000000000000b1"
	pAcctBroke = "acct_00000000000000b2"

	pInOre, pOutOre = 1500, 6000
)

// protoGateway is a gateway in front of a simulator.
type protoGateway struct {
	URL         string
	Meter       *memmeter.Meter
	Sim         *simulator.Server
	Key, BrokeK string
}

// startProtoGateway starts a simulator (knobs k, fixed clock) and a gateway serving the
// protocol catalogue from it.
func startProtoGateway(t testing.TB, k simulator.Knobs) *protoGateway {
	t.Helper()
	sm := startSim(t, "sim", k)
	snap, key, broke := protoSnapshot(t, sm.BaseURL())
	g := &protoGateway{Meter: memmeter.New(0), Sim: sm, Key: key, BrokeK: broke}
	g.Meter.SeedBalances(snap.Balances, snap.BalanceSeq)
	g.URL = serve(t, storeOf(t, snap), g.Meter)
	return g
}

func protoSnapshot(t testing.TB, baseURL string) (*snapshot.Snapshot, string, string) {
	t.Helper()
	var keys []snapshot.Key
	mk := func(acct string) string {
		id, secret, hash, err := apikey.New()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, snapshot.Key{ID: id, AccountID: acct, Hash: hash})
		return secret
	}
	key, broke := mk(pAcct), mk(pAcctBroke)
	enabled := []string{pmNative, pmTranslated, pmChatOnly, pmDecider}
	model := func(id, ep string, aliases ...string) snapshot.Model {
		return snapshot.Model{ID: id, Aliases: aliases, Endpoint: ep, Created: 1700000000,
			InputOrePerMillion: pInOre, OutputOrePerMillion: pOutOre}
	}
	route := func(id, model string, translate bool, protocols ...string) snapshot.Route {
		return snapshot.Route{ID: id, Model: model, Provider: "sim-se", BaseURL: baseURL, Protocols: protocols,
			Translate: translate, Region: "se-sto-1", Country: "SE", Weight: 1}
	}
	native := route("rt_native", pmNative, false, snapshot.EndpointChat, snapshot.EndpointMessages, snapshot.EndpointResponses)
	native.UpstreamModel = pmNativeUp
	s := &snapshot.Snapshot{Version: 1, GeneratedAt: time.Unix(1700000000, 0), Content: snapshot.Content{
		Accounts: []snapshot.Account{
			{ID: pAcct, Customer: "Proto AB", Residency: "se", Models: enabled},
			{ID: pAcctBroke, Customer: "Broke AB", Residency: "se", Models: enabled},
		},
		Keys: keys,
		Models: []snapshot.Model{
			model(pmNative, snapshot.EndpointMessages),
			model(pmTranslated, snapshot.EndpointChat, pmTransAlias),
			model(pmChatOnly, snapshot.EndpointChat),
			model(pmDecider, snapshot.EndpointSystemOne),
			model(pmHidden, snapshot.EndpointChat),
		},
		Routes: []snapshot.Route{
			native,
			route("rt_translated", pmTranslated, true, snapshot.EndpointChat),
			route("rt_plain", pmChatOnly, false, snapshot.EndpointChat),
			route("rt_decider", pmDecider, false, snapshot.EndpointSystemOne),
			route("rt_hidden", pmHidden, true, snapshot.EndpointChat),
		},
		Balances:   []snapshot.Balance{{AccountID: pAcct, MicroSEK: 100_000_000}, {AccountID: pAcctBroke, MicroSEK: 0}},
		BalanceSeq: 7,
	}}
	h, err := snapshot.ComputeHash(&s.Content)
	if err != nil {
		t.Fatal(err)
	}
	s.Hash = h
	return s, key, broke
}

// waitRecords waits for the n-th record (streams record after the body is written).
func (g *protoGateway) waitRecords(t testing.TB, n int) []*usage.Record {
	t.Helper()
	return awaitRecords(t, g.Meter, n)
}

// dialectGateway is a data-plane server in front of the simulator's dialects: model
// "dl-<dialect>" has one route, to that dialect, naming its server, translating Messages
// and Responses; the vLLM route asks for running usage.
type dialectGateway struct {
	URL, Key string
	Meter    *memmeter.Meter
	Sim      *simulator.Server
	// body is the last request body a client sent (captured by the clients' middleware).
	body []byte
}

func dialectModel(d string) string { return "dl-" + d }

func startDialectGateway(t testing.TB) *dialectGateway {
	t.Helper()
	sm := startSim(t, "dl", simulator.Knobs{})
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
	g := &dialectGateway{Key: secret, Meter: memmeter.New(0), Sim: sm}
	g.Meter.SeedBalances(c.Balances, c.BalanceSeq)
	g.URL = serve(t, storeOf(t, snap), g.Meter)
	return g
}

// capture is the clients' middleware: it keeps the request body.
func (g *dialectGateway) capture(req *http.Request) {
	if req.Body == nil {
		return
	}
	b, _ := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(b))
	g.body = b
}

// estimate is the node's prompt estimate of the last body sent to path.
func (g *dialectGateway) estimate(t *testing.T, path string) int64 {
	t.Helper()
	req, perr := reqparse.Parse(path, g.body)
	if perr != nil {
		t.Fatalf("%s body %s: %v", path, g.body, perr)
	}
	return min(req.EstimatedPromptTokens(), tokens.NewBounds(0, req.MaxTokens, 1).Prompt)
}

// charge is what a request must be recorded as.
type charge struct {
	result   string
	status   int
	in, out  int64
	estimate bool // in is the node's prompt estimate
}

// wantCharge is the record of scenario sc on dialect d, by the one rule (streamCharge):
// an answer is charged its usage; a stream that ends in an error is charged the usage the
// server reported, else what was delivered (the prompt estimate, one token per generation
// output); a failure before any output is not charged.
func wantCharge(d, sc string, stream bool) charge {
	out := int64(simulator.DialectTextWords)
	switch sc {
	case simulator.ScenarioReasoning:
		if d != simulator.DialectTGI && d != simulator.DialectOpenAI {
			out += simulator.DialectReasoningWords
		}
	case simulator.ScenarioTool:
		out = int64(len(simulator.DialectToolFragments))
	case simulator.ScenarioOverflow:
		return charge{result: usage.ResultRejected, status: 400}
	case simulator.ScenarioError, simulator.ScenarioCut:
		if !stream {
			return charge{result: usage.ResultUpstreamError, status: 502}
		}
		result := usage.ResultUpstreamError
		if sc == simulator.ScenarioCut {
			result = usage.ResultIncomplete
		}
		if d == simulator.DialectVLLM {
			return charge{result: result, status: 200, in: 2, out: 2} // its running usage
		}
		// Two text chunks delivered; the empty chunk Ollama ends a cut stream with carries
		// no output and is not charged.
		return charge{result: result, status: 200, out: 2, estimate: true}
	}
	return charge{result: usage.ResultOK, status: 200, in: 2, out: out}
}

// checkRecord checks the newest record against want (in filled from the estimate).
func (g *dialectGateway) checkRecord(t *testing.T, n int, path string, want charge) {
	t.Helper()
	recs := awaitRecords(t, g.Meter, n)
	rec := recs[n-1]
	if want.estimate {
		want.in = g.estimate(t, path)
	}
	price := money.Price(want.in, want.out, pInOre, pOutOre)
	if rec.Endpoint != path || rec.Result != want.result || rec.Status != want.status || rec.PromptTokens != want.in ||
		rec.CompletionTokens != want.out || rec.PriceMicroSEK != price {
		t.Errorf("record %s %s status %d tokens %d/%d price %d, want %s status %d tokens %d/%d price %d",
			rec.Endpoint, rec.Result, rec.Status, rec.PromptTokens, rec.CompletionTokens, rec.PriceMicroSEK,
			want.result, want.status, want.in, want.out, price)
	}
}

// dialectScenarios are the cases every dialect × protocol × stream runs (cut only
// streamed: an answer that is not streamed cannot end early).
var dialectScenarios = []string{simulator.ScenarioPlain, simulator.ScenarioReasoning, simulator.ScenarioTool,
	simulator.ScenarioStop, simulator.ScenarioCached, simulator.ScenarioError, simulator.ScenarioCut,
	simulator.ScenarioOverflow, simulator.ScenarioSSE}

// hasReasoning reports whether dialect d streams reasoning in a member of its own.
func hasReasoning(d string) bool { return d != simulator.DialectTGI && d != simulator.DialectOpenAI }

// namesStop reports whether dialect d names the stop sequence that ended an answer
// (vLLM stop_reason, SGLang matched_stop; TGI's stop_sequence finish with the request's
// only stop sequence).
func namesStop(d string) bool {
	return d == simulator.DialectVLLM || d == simulator.DialectSGLang || d == simulator.DialectTGI
}
