package plan

import (
	"github.com/tidwall/sjson"

	"github.com/sekgate/gateway/dataplane/admit"
	"github.com/sekgate/gateway/dataplane/dialect"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/outcome"
	"github.com/sekgate/gateway/shared/apierror"
)

// Tenant cache isolation (docs/security.md). On a model with account cache isolation (the
// default), the node keeps accounts apart in the model servers' prefix caches and in its
// own prefix affinity:
//
//   - every chat or text completions body bound for a server that honours cache_salt
//     (dialect.Dialect.CacheSalt: vLLM, SGLang) carries the account's salt
//     (index.Account.CacheSalt, precomputed per snapshot), so requests of different
//     accounts never share a cached prefix there. A cache_salt the client sent is
//     overwritten: no account can pick another's salt, and the salt's fixed length keeps
//     SGLang's join of cache_salt and extra_key from reaching another account's either.
//     Servers without the field are sent the body as the client wrote it.
//   - the prefix key (routing.PrefixKey) includes the account, so identical prompts of
//     two accounts are different keys.
//
// On a model with shared isolation the body and the key are as the client's request makes
// them: a cache_salt the client sent reaches the server unchanged.

// callTenant is what keeps the requests of p to m apart: the account's ID for the prefix
// key and its cache salt, or empty for both when m shares its cache.
func callTenant(p admit.Principal, m *index.Model) (tenant, salt string) {
	if m.SharesCache() {
		return "", ""
	}
	return p.Acct.ID, p.Acct.CacheSalt
}

// Salted returns body, bound for upstream endpoint ue of a route whose server is d, with
// call c's cache salt when it has one and d honours it.
func (c *Call) Salted(body []byte, ue index.Endpoint, d *dialect.Dialect) ([]byte, *apierror.Error) {
	if c.Salt == "" || (ue != index.EPChat && ue != index.EPCompletions) || !d.CacheSalt {
		return body, nil
	}
	out, err := sjson.SetBytes(body, "cache_salt", c.Salt)
	if err != nil {
		return nil, outcome.ErrBodyEdit
	}
	return out, nil
}
