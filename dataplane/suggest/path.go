package suggest

import (
	"bytes"
	"strings"
)

// endpointTails are the interface's paths below /v1, longest first, that a client with a
// misconfigured base URL most often reaches without /v1 or with it twice.
var endpointTails = []string{
	"/messages/count_tokens", "/chat/completions", "/service/requests", "/service/account",
	"/service/signup", "/service/topup", "/embeddings", "/completions", "/responses", "/messages",
	"/systemone", "/models",
}

// KnownPath is a path of the interface a mistyped one is compared with; a parent path
// (/v1/models, /v1/service/requests) also takes one more segment, its resource's ID.
type KnownPath struct {
	Path   string
	Parent bool
}

// KnownPaths are the interface's paths: OpenAI-style, Messages-style, Responses-style and
// the account service paths (a test checks they cover the router's).
var KnownPaths = []KnownPath{
	{"/healthz", false}, {"/openapi.json", false}, {"/docs", false},
	{"/v1/models", true}, {"/v1/chat/completions", false}, {"/v1/completions", false},
	{"/v1/embeddings", false}, {"/v1/responses", false}, {"/v1/messages", false},
	{"/v1/messages/count_tokens", false}, {"/v1/systemone", false},
	{"/v1/service/account", false}, {"/v1/service/requests", true}, {"/v1/service/topup", false},
	{"/v1/service/signup", false}, {"/v1/stripe/webhook", false},
}

// Path names the path a request to the unknown path p most likely meant, or "" when
// none. baseURL reports a base URL mistake (/chat/completions without /v1, /v1/v1/messages
// with it twice) rather than a typo. Runs on the error path only.
func Path(p []byte) (hint string, baseURL bool) {
	if h := baseURLHint(p); h != "" {
		return h, true
	}
	if len(p) > 200 {
		return "", false
	}
	orig := strings.TrimSuffix(string(p), "/")
	want := Lower(orig)
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
	for _, k := range KnownPaths {
		limit := pathEditLimit(len(k.Path))
		if d := Distance(p, k.Path, limit); d <= limit && (best == "" || d < bestDist) {
			best, bestDist = k.Path, d
		}
		if !k.Parent {
			continue
		}
		if i := nthSlash(p, strings.Count(k.Path, "/")+1); i > 0 && i < len(p)-1 {
			if d := Distance(p[:i], k.Path, limit); d <= limit && (best == "" || d < bestDist) {
				best, bestDist = k.Path+orig[len(orig)-(len(p)-i):], d
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
