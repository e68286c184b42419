package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/internalapi"
)

// testBoxKey admits a console test-box request: the control plane sends a request on
// behalf of an account, naming it in X-Gateway-Test-Box-Account and authenticated with the
// test-box token (Config.TestBoxToken: its own credential, never the node token). It is
// admitted only on a connection of the private test-box listener (ServeTestBox): on the
// public listener the token is an unknown key like any other, and it admits chat
// completions only. The request is served,
// limited, recorded and charged like any other of the account; its key has no ID, so its
// record carries key_id null.
func (s *Server) testBoxKey(ctx *fasthttp.RequestCtx, idx *index.Index, secret []byte) (*index.Key, bool) {
	acct := ctx.Request.Header.Peek(internalapi.HeaderTestBoxAccount)
	if len(acct) == 0 || s.cfg.TestBoxToken == "" {
		return nil, false
	}
	if _, private := ctx.Conn().(testBoxConn); !private {
		return nil, false
	}
	if !ctx.IsPost() || string(ctx.Path()) != "/v1/chat/completions" {
		return nil, false // the test box sends chat; its token reads nothing (/v1/service/*)
	}
	got, want := sha256.Sum256(secret), sha256.Sum256([]byte(s.cfg.TestBoxToken))
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		return nil, false
	}
	a, ok := idx.Account(string(acct))
	if !ok {
		return nil, false
	}
	return &index.Key{Account: a}, true
}

// ServeTestBox serves the same paths on ln, a private listener operators keep off the
// public network (--test-box-listen), where the test-box token is admitted too. Connections
// there are not under the public listener's caps.
func (s *Server) ServeTestBox(ln net.Listener) error {
	return s.srv.Serve(testBoxListener{ln})
}

type testBoxListener struct{ net.Listener }

func (l testBoxListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return testBoxConn{c}, nil
}

// testBoxConn marks a connection of the test-box listener.
type testBoxConn struct{ net.Conn }
