package admit

import (
	"crypto/sha256"
	"crypto/subtle"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/internalapi"
)

// TestBoxConn is a connection of the private test-box listener.
type TestBoxConn interface{ TestBox() }

// testBoxKey admits a console test-box request: the control plane sends a request on
// behalf of an account, naming it in X-Gateway-Test-Box-Account and authenticated with the
// test-box token (Config.TestBoxToken: its own credential, never the node token). It is
// admitted only on a connection of the private test-box listener (a TestBoxConn): on the
// public listener the token is an unknown key like any other, and it admits chat
// completions only. The request is served, limited, recorded and charged like any other
// of the account; its key has no ID, so its record carries key_id null.
func (s *Admitter) testBoxKey(ctx *fasthttp.RequestCtx, idx *index.Index, secret []byte) (*index.Key, bool) {
	acct := ctx.Request.Header.Peek(internalapi.HeaderTestBoxAccount)
	if len(acct) == 0 || s.cfg.TestBoxToken == "" {
		return nil, false
	}
	if _, private := ctx.Conn().(TestBoxConn); !private {
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
