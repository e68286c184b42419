package server

import (
	"crypto/sha256"
	"crypto/subtle"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/internalapi"
)

// testBoxKey admits a console test-box request: the control plane sends a request on
// behalf of an account, naming it in X-Gateway-Test-Box-Account and authenticated with
// this node's own token (which already lets its holder report usage for any account, so
// this grants nothing more). The request is served, limited, recorded and charged like
// any other of the account; its key has no ID, so its record carries key_id null. Without
// a node token, or without the header, nothing is admitted here.
func (s *Server) testBoxKey(ctx *fasthttp.RequestCtx, idx *index.Index, secret []byte) (*index.Key, bool) {
	acct := ctx.Request.Header.Peek(internalapi.HeaderTestBoxAccount)
	if len(acct) == 0 || s.cfg.NodeToken == "" {
		return nil, false
	}
	got, want := sha256.Sum256(secret), sha256.Sum256([]byte(s.cfg.NodeToken))
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		return nil, false
	}
	a, ok := idx.Account(string(acct))
	if !ok {
		return nil, false
	}
	return &index.Key{Account: a}, true
}
