package syncclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/internalapi"
)

// Every snapshot poll carries the routes whose breaker is not closed; without a Breakers
// function the header is absent.
func TestPollReportsBreakers(t *testing.T) {
	cp := newFakeCP(builtFor(t, 1, ""))
	var mu sync.Mutex
	var got [][]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Values(internalapi.HeaderBreakers))
		mu.Unlock()
		cp.ServeHTTP(w, r)
	}))
	defer srv.Close()
	var st index.Store
	c, _ := loggedClient(t, srv.URL, t.TempDir(), &st, nil)
	if err := c.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.cfg.Breakers = func() map[string]string { return map[string]string{"chat-se": "open", "b": "closed"} }
	if err := c.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || len(got[0]) != 0 || len(got[1]) != 1 || got[1][0] != "chat-se=open" {
		t.Fatalf("breaker headers %q", got)
	}
}
