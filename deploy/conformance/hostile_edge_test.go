package conformance

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawResponses writes raw to the data plane on a fresh connection, reads until the data
// plane closes it (at most wait), and returns every response it sent and whether it
// closed the connection.
func rawResponses(t *testing.T, s *Stack, raw string, wait time.Duration) ([]Response, bool) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(s.DataURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() { _, _ = io.WriteString(c, raw) }()
	_ = c.SetReadDeadline(time.Now().Add(wait))
	var out []Response
	br := bufio.NewReader(c)
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			ne, ok := err.(net.Error)
			return out, !(ok && ne.Timeout())
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		out = append(out, Response{Status: resp.StatusCode, Header: resp.Header, Body: b})
	}
}

// edgeCase is one hostile request in raw HTTP/1.1 and the one answer it must get.
type edgeCase struct {
	name   string
	raw    string
	status int
}

// TestHostileEdge (interface: Errors, Limits): hostile framing, path tricks,
// mixed and duplicate credentials and bodies at and past each endpoint's limit, in raw
// HTTP/1.1 against the running data plane. Each gets exactly one answer, the interface's
// JSON error with its status; a request pipelined behind bad framing is never answered;
// nothing reaches the simulator and nothing reaches the account's records or balance.
// Every request carries a valid key of a funded account and, where it has a body, a body
// that would be served if the gateway believed the framing. Not parallel, so that the
// simulator's counter sees only this test. (Request values - numbers, text, media,
// nesting, duplicate keys - are TestHostileValues.)
func TestHostileEdge(t *testing.T) {
	s := getStack(t)
	a := s.NewAccount(t, "se", 100)
	other := s.NewAccount(t, "se", 100)
	balance := func() any { return s.account(t, a)["balance_micro_sek"] }
	simBefore, brokenBefore, balBefore := simStats(t, s).Requests, brokenSimRequests(t, s), balance()

	chat := `{"model":"` + modelChat + `","messages":[{"role":"user","content":"Hej"}],"max_tokens":4}`
	msgs := `{"model":"` + modelChat + `","messages":[{"role":"user","content":"Hej"}],"max_tokens":4}`
	head := func(method, path string, hdr ...string) string {
		h := method + " " + path + " HTTP/1.1\r\nHost: gateway\r\n"
		for _, x := range hdr {
			h += x + "\r\n"
		}
		return h
	}
	auth := "Authorization: Bearer " + a.Key
	ctype := "Content-Type: application/json"
	withBody := func(path, body string, hdr ...string) string {
		return head("POST", path, append(hdr, ctype, fmt.Sprintf("Content-Length: %d", len(body)))...) + "\r\n" + body
	}
	chunked := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(chat), chat)
	pipelined := head("POST", "/v1/chat/completions", auth, ctype, fmt.Sprintf("Content-Length: %d", len(chat))) + "\r\n" + chat

	framing := []edgeCase{
		{"Content-Length then chunked", head("POST", "/v1/chat/completions", auth, ctype, "Content-Length: 6", "Transfer-Encoding: chunked") + "\r\n" + chunked, 400},
		{"chunked then Content-Length", head("POST", "/v1/chat/completions", auth, ctype, "Transfer-Encoding: chunked", fmt.Sprintf("Content-Length: %d", len(chat))) + "\r\n" + chunked, 400},
		{"Content-Length with identity", head("POST", "/v1/chat/completions", auth, ctype, "Transfer-Encoding: identity", fmt.Sprintf("Content-Length: %d", len(chat))) + "\r\n" + chat, 400},
		{"Content-Length with gzip coding", head("POST", "/v1/chat/completions", auth, ctype, "Transfer-Encoding: gzip, chunked") + "\r\n" + chunked, 400},
		{"two differing Content-Lengths", head("POST", "/v1/chat/completions", auth, ctype, fmt.Sprintf("Content-Length: %d", len(chat)), "Content-Length: 5") + "\r\n" + chat, 400},
		{"two equal Content-Lengths", head("POST", "/v1/chat/completions", auth, ctype, fmt.Sprintf("Content-Length: %d", len(chat)), fmt.Sprintf("Content-Length: %d", len(chat))) + "\r\n" + chat, 400},
		{"Content-Length list", head("POST", "/v1/chat/completions", auth, ctype, fmt.Sprintf("Content-Length: %d, %d", len(chat), len(chat))) + "\r\n" + chat, 400},
		{"negative Content-Length", head("POST", "/v1/chat/completions", auth, ctype, "Content-Length: -1") + "\r\n" + chat, 400},
		{"Content-Length 2^64", head("POST", "/v1/chat/completions", auth, ctype, "Content-Length: 18446744073709551616") + "\r\n" + chat, 400},
		{"chunk size not hex", head("POST", "/v1/chat/completions", auth, ctype, "Transfer-Encoding: chunked") + "\r\nzz\r\n" + chat + "\r\n0\r\n\r\n", 400},
		{"chunk size negative", head("POST", "/v1/chat/completions", auth, ctype, "Transfer-Encoding: chunked") + "\r\n-4\r\n" + chat + "\r\n0\r\n\r\n", 400},
		{"chunk size overflows", head("POST", "/v1/chat/completions", auth, ctype, "Transfer-Encoding: chunked") + "\r\n10000000000000000\r\n" + chat + "\r\n0\r\n\r\n", 400},
		{"chunk shorter than its size", head("POST", "/v1/chat/completions", auth, ctype, "Transfer-Encoding: chunked") + "\r\n3\r\n" + chat + "\r\n0\r\n\r\n", 400},
		{"chunk without CRLF", head("POST", "/v1/chat/completions", auth, ctype, "Transfer-Encoding: chunked") + fmt.Sprintf("\r\n%x\r\n%sXX0\r\n\r\n", len(chat), chat), 400},
		{"chunked body over 8 MiB", head("POST", "/v1/chat/completions", auth, ctype, "Transfer-Encoding: chunked") + "\r\n" +
			strings.Repeat(fmt.Sprintf("%x\r\n%s\r\n", 1<<20, strings.Repeat(" ", 1<<20)), 9) + "0\r\n\r\n", 413},
		{"1 MiB header", head("POST", "/v1/chat/completions", auth, ctype, "X-Filler: "+strings.Repeat("a", 1<<20), fmt.Sprintf("Content-Length: %d", len(chat))) + "\r\n" + chat, 431},
		{"1 MiB of small headers", head("POST", "/v1/chat/completions", auth, ctype, strings.Repeat("X-F: a\r\n", (1<<20)/8)+fmt.Sprintf("Content-Length: %d", len(chat))) + "\r\n" + chat, 431},
		{"1 MiB request target", head("POST", "/v1/chat/completions?x="+strings.Repeat("a", 1<<20), auth, ctype, fmt.Sprintf("Content-Length: %d", len(chat))) + "\r\n" + chat, 431},
		{"header without colon", head("POST", "/v1/chat/completions", auth, ctype, "Broken header", fmt.Sprintf("Content-Length: %d", len(chat))) + "\r\n" + chat, 400},
		{"header folded", head("POST", "/v1/chat/completions", auth, ctype, "X-A: b", " folded", fmt.Sprintf("Content-Length: %d", len(chat))) + "\r\n" + chat, 400},
		{"space before colon", head("POST", "/v1/chat/completions", auth, ctype, "Content-Length : 3", fmt.Sprintf("Content-Length: %d", len(chat))) + "\r\n" + chat, 400},
		{"HTTP/1.0 chunked", strings.Replace(head("POST", "/v1/chat/completions", auth, ctype, "Transfer-Encoding: chunked"), "HTTP/1.1", "HTTP/1.0", 1) + "\r\n" + chunked, 400},
	}
	t.Run("framing", func(t *testing.T) {
		for _, c := range framing {
			t.Run(c.name, func(t *testing.T) {
				rs, closed := rawResponses(t, s, c.raw+pipelined, 10*time.Second)
				if !closed {
					t.Fatal("connection left open after bad framing")
				}
				if len(rs) != 1 {
					t.Fatalf("%d answers, want exactly 1 (the pipelined request must not be answered): %v", len(rs), statuses(rs))
				}
				checkEdgeError(t, rs[0], c.status)
			})
		}
	})

	adminAuth := "Authorization: Bearer " + s.AdminToken
	paths := []edgeCase{
		{"dot-dot to admin", head("GET", "/v1/../admin/v1/accounts", adminAuth) + "\r\n", 404},
		{"encoded dot-dot to admin", head("GET", "/v1/%2e%2e/admin/v1/accounts", adminAuth) + "\r\n", 404},
		{"upper encoded dot-dot to admin", head("GET", "/v1/%2E%2E/%2E%2E/admin/v1/accounts", adminAuth) + "\r\n", 404},
		{"admin path", head("GET", "/admin/v1/accounts", adminAuth) + "\r\n", 404},
		{"encoded admin path", head("GET", "/%61dmin/v1/accounts", adminAuth) + "\r\n", 404},
		{"admin snapshot", head("GET", "/admin/v1/snapshot", "Authorization: Bearer "+s.NodeToken) + "\r\n", 404},
		{"model path escape", head("GET", "/v1/models/..%2F..%2Fadmin%2Fv1%2Faccounts", auth) + "\r\n", 404},
		{"double slash", withBody("//v1/chat/completions", chat, auth), 404},
		{"inner double slash", withBody("/v1//chat/completions", chat, auth), 404},
		{"dot segment", withBody("/v1/./chat/completions", chat, auth), 404},
		{"dot-dot segment", withBody("/v1/x/../chat/completions", chat, auth), 404},
		{"encoded dot-dot segment", withBody("/v1/x/%2e%2e/chat/completions", chat, auth), 404},
		{"encoded slash", withBody("/v1/chat%2Fcompletions", chat, auth), 404},
		{"encoded slashes", withBody("/v1%2Fchat%2Fcompletions", chat, auth), 404},
		{"upper case", withBody("/V1/CHAT/COMPLETIONS", chat, auth), 404},
		{"backslash", withBody("/v1\\chat\\completions", chat, auth), 404},
		{"encoded NUL", withBody("/v1/chat/completions%00", chat, auth), 404},
		{"path parameter", withBody("/v1/chat/completions;x=1", chat, auth), 404},
		{"no leading slash", withBody("v1/chat/completions", chat, auth), 400},
	}
	t.Run("paths", func(t *testing.T) {
		for _, c := range paths {
			t.Run(c.name, func(t *testing.T) {
				rs, _ := rawResponses(t, s, c.raw+head("GET", "/healthz", "Connection: close")+"\r\n", 10*time.Second)
				if len(rs) == 0 {
					t.Fatal("no answer")
				}
				checkEdgeError(t, rs[0], c.status)
			})
		}
	})

	creds := []edgeCase{
		{"Authorization invalid, x-api-key valid", withBody("/v1/messages", msgs, "Authorization: Bearer sgw_000000000000_"+strings.Repeat("0", 40), "x-api-key: "+a.Key), 401},
		{"Authorization not bearer, x-api-key valid", withBody("/v1/messages", msgs, "Authorization: Basic "+a.Key, "x-api-key: "+a.Key), 401},
		{"Authorization empty bearer, x-api-key valid", withBody("/v1/messages", msgs, "Authorization: Bearer ", "x-api-key: "+a.Key), 401},
		{"x-api-key on an OpenAI-style path", withBody("/v1/chat/completions", chat, "x-api-key: "+a.Key), 401},
		{"two Authorization headers, two accounts", withBody("/v1/chat/completions", chat, auth, "Authorization: Bearer "+other.Key), 401},
		{"two Authorization headers, one key", withBody("/v1/chat/completions", chat, auth, auth), 401},
		{"two x-api-key headers", withBody("/v1/messages", msgs, "x-api-key: "+a.Key, "X-API-KEY: "+other.Key), 401},
		{"key in the query", withBody("/v1/chat/completions?api_key="+a.Key, chat), 401},
		{"key with trailing garbage", withBody("/v1/chat/completions", chat, "Authorization: Bearer "+a.Key+"x"), 401},
		{"admin token as key", withBody("/v1/chat/completions", chat, adminAuth), 401},
		{"node token as key", withBody("/v1/chat/completions", chat, "Authorization: Bearer "+s.NodeToken), 401},
	}
	t.Run("credentials", func(t *testing.T) {
		for _, c := range creds {
			t.Run(c.name, func(t *testing.T) {
				rs, _ := rawResponses(t, s, c.raw+head("GET", "/healthz", "Connection: close")+"\r\n", 10*time.Second)
				if len(rs) == 0 {
					t.Fatal("no answer")
				}
				checkEdgeError(t, rs[0], c.status)
			})
		}
	})

	// Bodies at and past each endpoint's limit. At the limit the body is read in full and
	// judged (it names no model of the catalogue: 404; the control plane's own rules for
	// its forms); one byte past it is the data plane's 413, before the body is read.
	pad := func(prefix, suffix string, size int) string {
		return prefix + strings.Repeat("a", size-len(prefix)-len(suffix)) + suffix
	}
	const mib = 1 << 20
	noModel := `{"model":"no-such-model",`
	lim := []struct {
		path, prefix, suffix string
		limit                int
		forwarded            bool
	}{
		{"/v1/chat/completions", noModel + `"messages":[{"role":"user","content":"`, `"}]}`, 8 * mib, false},
		{"/v1/completions", noModel + `"prompt":"`, `"}`, 8 * mib, false},
		{"/v1/embeddings", noModel + `"input":"`, `"}`, 8 * mib, false},
		{"/v1/responses", noModel + `"input":"`, `"}`, 8 * mib, false},
		{"/v1/messages", noModel + `"max_tokens":4,"messages":[{"role":"user","content":"`, `"}]}`, 8 * mib, false},
		{"/v1/messages/count_tokens", noModel + `"messages":[{"role":"user","content":"`, `"}]}`, 8 * mib, false},
		{"/v1/systemone", noModel + `"state":"`, `","questions":{"q":{"type":"noul"}}}`, 128 << 10, false},
		{"/v1/service/topup", `{"amount_sek":"100.00","x":"`, `"}`, mib, true},
		{"/v1/service/signup", `{"email":"`, `@example.com"}`, mib, true},
		{"/v1/stripe/webhook", `{"type":"checkout.session.completed","x":"`, `"}`, mib, true},
	}
	t.Run("limits", func(t *testing.T) {
		for _, l := range lim {
			for _, size := range []int{l.limit, l.limit + 1} {
				t.Run(fmt.Sprintf("%s/%d", l.path, size), func(t *testing.T) {
					hdr := []string{"Connection: close"}
					if !strings.HasPrefix(l.path, "/v1/service/signup") && !strings.HasPrefix(l.path, "/v1/stripe/") {
						hdr = append(hdr, auth)
					}
					rs, _ := rawResponses(t, s, withBody(l.path, pad(l.prefix, l.suffix, size), hdr...), 20*time.Second)
					if len(rs) != 1 {
						t.Fatalf("%d answers", len(rs))
					}
					switch {
					case size > l.limit:
						checkEdgeError(t, rs[0], 413)
						if !strings.Contains(string(rs[0].Body), "MiB") && !strings.Contains(string(rs[0].Body), "KiB") {
							t.Errorf("413 does not name the limit: %s", rs[0].Body)
						}
					case l.path == "/v1/service/signup":
						// The form's refusals redirect to the public site's error page.
						if rs[0].Status != 303 || !strings.HasPrefix(rs[0].Header.Get("Location"), s.ErrorURL) {
							t.Fatalf("status %d, Location %q", rs[0].Status, rs[0].Header.Get("Location"))
						}
					case l.forwarded:
						// The control plane judges its forms: refused, with the envelope.
						if rs[0].Status/100 != 4 || !json.Valid(rs[0].Body) {
							t.Fatalf("status %d: %.300s", rs[0].Status, rs[0].Body)
						}
					default:
						checkEdgeError(t, rs[0], 404)
					}
				})
			}
		}
	})

	if n := simStats(t, s).Requests - simBefore; n != 0 {
		t.Errorf("the simulator saw %d requests from the hostile edge corpus", n)
	}
	if n := brokenSimRequests(t, s) - brokenBefore; n != 0 {
		t.Errorf("the second simulator saw %d requests from the hostile edge corpus", n)
	}
	if recs, _ := s.listRecords(t, a, ""); len(recs) != 0 {
		t.Errorf("%d records for the account after the corpus: %+v", len(recs), recs)
	}
	if recs, _ := s.listRecords(t, other, ""); len(recs) != 0 {
		t.Errorf("%d records for the second account after the corpus", len(recs))
	}
	if b := balance(); b != balBefore {
		t.Errorf("balance %v after the corpus, %v before", b, balBefore)
	}
	// The node is still healthy and serving.
	if r := s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat, "max_tokens", 4)); r.Status != 200 {
		t.Fatalf("ordinary request after the corpus: %d %s", r.Status, r.Body)
	}
}

func statuses(rs []Response) []int {
	var out []int
	for _, r := range rs {
		out = append(out, r.Status)
	}
	return out
}

// checkEdgeError asserts the interface's JSON error envelope with the given status.
func checkEdgeError(t *testing.T, r Response, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %.300s", r.Status, status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("content type %q: %.300s", ct, r.Body)
	}
	var e envelope
	if err := json.Unmarshal(r.Body, &e); err != nil || e.Error.Type == "" || e.Error.Message == "" {
		t.Fatalf("not an error envelope (%v): %.300s", err, r.Body)
	}
	if !strings.HasPrefix(r.Header.Get("X-Request-Id"), "req_") {
		t.Errorf("no X-Request-Id on %d", r.Status)
	}
	noRouteHeaders(t, r.Header)
}
