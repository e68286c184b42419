package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/memmeter"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/apikey"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

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
	*gateway
	Sim         *simulator.Server
	Key, BrokeK string
}

// startProtoGateway starts a simulator (knobs k, fixed clock) and a gateway serving the
// protocol catalogue from it.
func startProtoGateway(t testing.TB, k simulator.Knobs) *protoGateway {
	t.Helper()
	sm := simulator.New(simulator.Config{Name: "sim", Knobs: k, Now: func() time.Time { return time.Unix(1700000000, 0) }})
	if err := sm.Start(context.Background(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sm.Close() })
	g := startProtoGatewayURL(t, sm.BaseURL())
	g.Sim = sm
	return g
}

// recordingUpstream is a scripted provider: answer returns the content type and body for
// each request; the last request body is kept.
type recordingUpstream struct {
	*httptest.Server
	mu     sync.Mutex
	answer func(path string, body []byte) (contentType, respBody string)
}

func newRecordingUpstream(t testing.TB, answer func(path string, body []byte) (string, string)) *recordingUpstream {
	u := &recordingUpstream{answer: answer}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		ct, body := u.answer(r.URL.Path, b)
		u.mu.Unlock()
		w.Header().Set("Content-Type", ct)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(u.Close)
	return u
}

// startProtoGatewayAt serves the protocol catalogue from a scripted upstream.
func startProtoGatewayAt(t testing.TB, u *recordingUpstream) *protoGateway {
	return startProtoGatewayURL(t, u.URL+"/v1")
}

func startProtoGatewayURL(t testing.TB, baseURL string) *protoGateway {
	t.Helper()
	snap, key, broke := protoSnapshot(baseURL)
	x, err := index.Build(snap)
	if err != nil {
		t.Fatal(err)
	}
	g := &gateway{Store: &index.Store{}, Meter: memmeter.New(0), Snap: snap}
	g.Store.Swap(x)
	g.Meter.SeedBalances(snap.Balances, snap.BalanceSeq)
	g.Srv, err = New(Config{Store: g.Store, Meter: g.Meter,
		Pool: proxy.NewPool(proxy.Config{FirstByteTimeout: 2 * time.Second})})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Srv.Serve(ln) }()
	t.Cleanup(func() { _ = g.Srv.Shutdown() })
	g.URL = "http://" + ln.Addr().String()
	return &protoGateway{gateway: g, Key: key, BrokeK: broke}
}

func protoSnapshot(baseURL string) (*snapshot.Snapshot, string, string) {
	var keys []snapshot.Key
	mk := func(acct string) string {
		id, secret, hash, err := apikey.New()
		if err != nil {
			panic(err)
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
		panic(err)
	}
	s.Hash = h
	return s, key, broke
}

// waitRecords waits for the n-th record (streams record after the body is written).
func (g *protoGateway) waitRecords(t testing.TB, n int) []*usage.Record {
	t.Helper()
	return awaitRecords(t, g.Meter, n)
}
