package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/shared/snapshot"
)

// keepAliveRound opens n connections to g at once, sends req on each, and reads the answer
// on each; with again it sends req a second time on every connection still open (all of
// them held open meanwhile). It returns the statuses seen (0: no answer) and closes all.
func keepAliveRound(t *testing.T, g *gateway, n int, req string, again bool) map[int]int {
	t.Helper()
	addr := strings.TrimPrefix(g.URL, "http://")
	type cl struct {
		c  net.Conn
		br *bufio.Reader
	}
	conns := make([]*cl, n)
	statuses := make([]int, 0, 2*n)
	var mu sync.Mutex
	exchange := func(c *cl) int {
		_ = c.c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.WriteString(c.c, req); err != nil {
			return 0
		}
		resp, err := http.ReadResponse(c.br, nil)
		if err != nil {
			return 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Close {
			c.c.Close()
			c.c = nil
		}
		return resp.StatusCode
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				mu.Lock()
				statuses = append(statuses, -1)
				mu.Unlock()
				return
			}
			conns[i] = &cl{c: c, br: bufio.NewReader(c)}
			st := exchange(conns[i])
			mu.Lock()
			statuses = append(statuses, st)
			mu.Unlock()
		}()
	}
	wg.Wait()
	defer func() {
		for _, c := range conns {
			if c != nil && c.c != nil {
				c.c.Close()
			}
		}
	}()
	if again {
		for _, c := range conns {
			if c == nil || c.c == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				st := exchange(c)
				mu.Lock()
				statuses = append(statuses, st)
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	count := map[int]int{}
	for _, s := range statuses {
		count[s]++
	}
	return count
}

// TestConnCapCountsStrangers: the per-address cap counts connections that have not
// presented a valid key. 500 keep-alive connections opened at once from one address with
// one valid key are all served, twice each (the account's limits allow it); 2,000 keyless
// connections from one address are refused 429 beyond the cap as before.
func TestConnCapCountsStrangers(t *testing.T) {
	g := startGateway(t, func(c *Config) { c.MaxConns = 5000 })
	withAccountLimits(t, g, &snapshot.Limits{MaxConcurrent: 1000})
	keyed := "GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + g.Keys.SE + "\r\n\r\n"
	got := keepAliveRound(t, g, 500, keyed, true)
	if got[200] != 1000 || len(got) != 1 {
		t.Fatalf("500 keyed connections, two requests each: statuses %v, want 1000 x 200", got)
	}
	anon := "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
	got = keepAliveRound(t, g, 2000, anon, false)
	if got[401] > 100 || got[429] < 1900 || got[401]+got[429] != 2000 {
		t.Fatalf("2000 keyless connections: statuses %v, want at most 100 x 401 and the rest 429", got)
	}
	// The keyless ones' places come back once they close.
	if !waitFor(10*time.Second, func() bool { return g.do(t, "GET", "/v1/models", "", "").Status == 401 }) {
		t.Fatal("the address's places did not come back")
	}
}

// TestConnCapAccountCap: authenticated connections count against their account's cap; past
// it a connection stays a stranger of its address.
func TestConnCapAccountCap(t *testing.T) {
	g := startGateway(t, func(c *Config) {
		c.MaxConnsPerAddr = 2
		c.MaxConnsPerAccount = 3
		c.AddrWait = -1
	})
	keyed := "GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + g.Keys.SE + "\r\n\r\n"
	addr := strings.TrimPrefix(g.URL, "http://")
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	dial := func() (int, net.Conn) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprint(c, keyed)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			c.Close()
			return 0, nil
		}
		resp.Body.Close()
		return resp.StatusCode, c
	}
	for i := range 5 { // 3 authenticated under the account cap, then 2 strangers
		st, c := dial()
		if st != 200 {
			t.Fatalf("connection %d: %d", i, st)
		}
		open = append(open, c)
	}
	if st, c := dial(); st != 429 {
		if c != nil {
			c.Close()
		}
		t.Fatalf("a connection over both caps: %d, want 429", st)
	}
}

// withAccountLimits installs a copy of g's snapshot with the SE account's limits set.
func withAccountLimits(t testing.TB, g *gateway, l *snapshot.Limits) {
	t.Helper()
	s := *g.Snap
	s.Version++
	s.Accounts = append([]snapshot.Account(nil), g.Snap.Accounts...)
	for i := range s.Accounts {
		if s.Accounts[i].ID == fixture.AcctSE {
			s.Accounts[i].Limits = l
		}
	}
	x, err := index.Build(&s)
	if err != nil {
		t.Fatal(err)
	}
	g.Store.Swap(x)
	g.Snap = &s
}
