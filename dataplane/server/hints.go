package server

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/shared/apierror"
)

// endpointTails are the interface's paths below /v1, longest first, that a client with a
// misconfigured base URL most often reaches without /v1 or with it twice.
var endpointTails = []string{
	"/messages/count_tokens", "/chat/completions", "/service/requests", "/service/account",
	"/service/signup", "/service/topup", "/embeddings", "/completions", "/responses", "/messages",
	"/systemone", "/models",
}

// pathHint names the path a request to the unknown path p most likely meant, or "" when
// none: /chat/completions without /v1, /v1/v1/messages with it twice, and the like.
func pathHint(p []byte) string {
	rest := p
	for bytes.HasPrefix(rest, []byte("/v1/")) {
		rest = rest[len("/v1"):]
	}
	for _, tail := range endpointTails {
		if bytes.HasPrefix(rest, []byte(tail)) && (len(rest) == len(tail) || rest[len(tail)] == '/') {
			if want := "/v1" + string(rest); want != string(p) {
				return want
			}
		}
	}
	return ""
}

// endpointNotFound answers an unknown path: 404 endpoint_not_found, naming the path meant
// when pathHint finds one, in the Messages-style envelope when that path is a Messages one.
func endpointNotFound(ctx *fasthttp.RequestCtx) {
	hint := pathHint(ctx.Path())
	if hint == "" {
		writeError(ctx, errEndpointNotFound)
		return
	}
	base := "{base_url}/v1 for OpenAI SDKs"
	if messagesPath([]byte(hint)) {
		base = "{base_url} without /v1 for Anthropic SDKs"
	}
	msg := fmt.Sprintf("unknown endpoint %s; did you mean %s? Check the client's base URL: %s.", ctx.Path(), hint, base)
	writeErrorStyle(ctx, apierror.New(404, apierror.TypeNotFound, apierror.CodeEndpointNotFound, msg), messagesPath([]byte(hint)))
}

// modelNotFound is the 404 for a model name the account cannot use. It names up to three
// of the account's visible models whose IDs or aliases are closest to name, never a model
// the account cannot see.
func modelNotFound(p principal, name string) *apierror.Error {
	if p.acct == nil || name == "" || len(name) > 200 {
		return errModelNotFound
	}
	type near struct {
		id   string
		dist int
	}
	var found []near
	want := strings.ToLower(name)
	limit := max(2, len(want)/3)
	for _, m := range p.acct.Visible {
		best := editDistance(want, strings.ToLower(m.ID), limit)
		for _, a := range m.Aliases {
			best = min(best, editDistance(want, strings.ToLower(a), limit))
		}
		if best <= limit {
			found = append(found, near{m.ID, best})
		}
	}
	if len(found) == 0 {
		return errModelNotFound
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].dist < found[j].dist })
	ids := make([]string, 0, 3)
	for i := 0; i < len(found) && i < 3; i++ {
		ids = append(ids, found[i].id)
	}
	return apierror.New(404, apierror.TypeNotFound, apierror.CodeModelNotFound,
		fmt.Sprintf("the model does not exist or is not available to this account; did you mean %s?", strings.Join(ids, ", "))).WithParam("model")
}

// editDistance is the Levenshtein distance of a and b, or limit+1 as soon as it must exceed
// limit.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d > limit || -d > limit {
		return limit + 1
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
