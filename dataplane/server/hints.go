package server

import (
	"bytes"
	"fmt"
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

// knownPath is a path of the interface a mistyped one is compared with; a parent path
// (/v1/models, /v1/service/requests) also takes one more segment, its resource's ID.
type knownPath struct {
	path   string
	parent bool
}

// knownPaths are the interface's paths: OpenAI-style, Messages-style, Responses-style and
// the account service paths (a test checks they cover the router's).
var knownPaths = []knownPath{
	{"/healthz", false}, {"/openapi.json", false}, {"/docs", false},
	{"/v1/models", true}, {"/v1/chat/completions", false}, {"/v1/completions", false},
	{"/v1/embeddings", false}, {"/v1/responses", false}, {"/v1/messages", false},
	{"/v1/messages/count_tokens", false}, {"/v1/systemone", false},
	{"/v1/service/account", false}, {"/v1/service/requests", true}, {"/v1/service/topup", false},
	{"/v1/service/signup", false}, {"/v1/stripe/webhook", false},
}

// pathHint names the path a request to the unknown path p most likely meant, or "" when
// none. baseURL reports a base URL mistake (/chat/completions without /v1, /v1/v1/messages
// with it twice) rather than a typo. Runs on the error path only.
func pathHint(p []byte) (hint string, baseURL bool) {
	if h := baseURLHint(p); h != "" {
		return h, true
	}
	if len(p) > 200 {
		return "", false
	}
	orig := strings.TrimSuffix(string(p), "/")
	want := asciiLower(orig)
	if h := nearestPath(want, orig); h != "" {
		if h == string(p) {
			return "", false // the router serves it: not a mistake
		}
		return h, false
	}
	if !strings.HasPrefix(want, "/v1/") {
		return nearestPath("/v1"+want, "/v1"+orig), true
	}
	return "", false
}

// baseURLHint is the known path p reaches with its /v1 missing or repeated, or "".
func baseURLHint(p []byte) string {
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

// nearestPath is the known path closest to p, the lower-cased orig, within a few edits
// (more for longer paths), or "". A parent path is compared with as many leading segments
// of p as it has, and keeps the rest of p (the resource ID) as sent.
func nearestPath(p, orig string) string {
	best, bestDist := "", 0
	for _, k := range knownPaths {
		limit := pathEditLimit(len(k.path))
		if d := editDistance(p, k.path, limit); d <= limit && (best == "" || d < bestDist) {
			best, bestDist = k.path, d
		}
		if !k.parent {
			continue
		}
		if i := nthSlash(p, strings.Count(k.path, "/")+1); i > 0 && i < len(p)-1 {
			if d := editDistance(p[:i], k.path, limit); d <= limit && (best == "" || d < bestDist) {
				best, bestDist = k.path+orig[len(orig)-(len(p)-i):], d
			}
		}
	}
	return best
}

// pathEditLimit is how many edits a path of n bytes may be off and still be suggested.
func pathEditLimit(n int) int {
	switch {
	case n <= 10:
		return 1
	case n <= 16:
		return 2
	}
	return 3
}

// nthSlash is the index of the nth '/' of p, or -1.
func nthSlash(p string, n int) int {
	for i := range len(p) {
		if p[i] == '/' {
			if n--; n == 0 {
				return i
			}
		}
	}
	return -1
}

// endpointNotFound answers an unknown path: 404 endpoint_not_found, naming the path meant
// when pathHint finds one (and the client's base URL when the mistake is there), in the
// Messages-style envelope when that path is a Messages one.
func (s *Server) endpointNotFound(ctx *fasthttp.RequestCtx) {
	hint, base := pathHint(ctx.Path())
	if hint == "" {
		writeError(ctx, errEndpointNotFound)
		return
	}
	ms := messagesPath([]byte(hint))
	msg := fmt.Sprintf("unknown endpoint %s; did you mean %s?", ctx.Path(), hint)
	if base {
		advice := s.baseURL(ctx) + "/v1 for OpenAI SDKs"
		if ms {
			advice = s.baseURL(ctx) + " without /v1 for Anthropic SDKs"
		}
		msg += " Check the client's base URL: " + advice + "."
	}
	writeErrorStyle(ctx, apierror.New(404, apierror.TypeNotFound, apierror.CodeEndpointNotFound, msg), ms)
}

// editDistance is the optimal-string-alignment distance of a and b (insertions,
// deletions, substitutions and swaps of adjacent bytes, each one edit), or limit+1 as soon
// as it must exceed limit.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d > limit || -d > limit {
		return limit + 1
	}
	rows := make([]int, 3*(len(b)+1))
	pprev, prev, cur := rows[:len(b)+1], rows[len(b)+1:2*(len(b)+1)], rows[2*(len(b)+1):]
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
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], pprev[j-2]+1)
			}
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		pprev, prev, cur = prev, cur, pprev
	}
	return prev[len(b)]
}

// asciiLower lower-cases the ASCII letters of s, keeping every other byte (and so its
// length) as it is.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
