package gatewayctl

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const token = "adm_test_token"

// fakeAdmin is an admin API stand-in: canned answers by "METHOD escaped-path", and a record
// of every request.
type fakeAdmin struct {
	mu      sync.Mutex
	answers map[string]answer
	got     []request
}

type answer struct {
	status int
	body   string
}

type request struct {
	method, path, auth, contentType string
	body                            string
	query                           string
}

func newFakeAdmin(t *testing.T) (*fakeAdmin, *httptest.Server) {
	f := &fakeAdmin{answers: map[string]answer{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.got = append(f.got, request{r.Method, r.URL.EscapedPath(), r.Header.Get("Authorization"), r.Header.Get("Content-Type"), string(b), r.URL.RawQuery})
		a, ok := f.answers[r.Method+" "+r.URL.EscapedPath()]
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if !ok {
			w.WriteHeader(404)
			io.WriteString(w, `{"error":{"type":"not_found_error","message":"no such thing","code":"not_found","param":null}}`)
			return
		}
		w.WriteHeader(a.status)
		io.WriteString(w, a.body)
	}))
	t.Cleanup(srv.Close)
	return f, srv
}

// query is the query string of the i-th request.
func (f *fakeAdmin) query(i int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.got[i].query
}

func (f *fakeAdmin) on(method, path string, status int, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[method+" "+path] = answer{status, body}
}

// runCLI runs gatewayctl against srv and returns exit code, stdout and stderr.
func runCLI(t *testing.T, srv *httptest.Server, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := map[string]string{"GATEWAY_ADMIN_URL": srv.URL, "GATEWAY_ADMIN_TOKEN": token}
	code := run(context.Background(), args, &out, &errOut, func(k string) string { return env[k] })
	return code, out.String(), errOut.String()
}

const acctJSON = `{"id":"acct_0123456789abcdef","customer":"Demo AB","residency":"se","suspended":false,"created_at":"2026-11-01T10:00:00Z","balance_micro_sek":500000000,"balance_sek":"500.00","models":["llama-3.1-8b-instruct","nomic-embed-text-v1.5"]}`
const acctWeightedJSON = `{"id":"acct_0123456789abcdef","customer":"Demo AB","residency":"se","suspended":false,"created_at":"2026-11-01T10:00:00Z","balance_micro_sek":0,"balance_sek":"0.00","models":[],"queue_weight":3}`
const acctSuspendedJSON = `{"id":"acct_0123456789abcdef","customer":"Demo AB","residency":"eu","suspended":true,"suspension_reason":"unpaid invoice","created_at":"2026-11-01T10:00:00Z","balance_micro_sek":-1500000,"balance_sek":"-1.50","models":[]}`
const acctLimitedJSON = `{"id":"acct_0123456789abcdef","customer":"Demo AB","residency":"se","suspended":false,"created_at":"2026-11-01T10:00:00Z","balance_micro_sek":0,"balance_sek":"0.00","models":[],"limits":{"requests_per_second":10,"burst":20},"effective_limits":{"requests_per_second":10,"burst":20,"source":"account"}}`
const acctDefaultLimitsJSON = `{"id":"acct_0123456789abcdef","customer":"Demo AB","residency":"se","suspended":false,"created_at":"2026-11-01T10:00:00Z","balance_micro_sek":0,"balance_sek":"0.00","models":[],"effective_limits":{"requests_per_second":100,"max_concurrent":8,"source":"default"}}`
const keyJSON = `{"id":"key_0123456789ab","secret":"sgw_0123456789ab_0123456789abcdef0123456789abcdef01234567","account_id":"acct_0123456789abcdef","name":"ci","created_at":"2026-11-01T10:00:00Z","expires_at":"2027-01-30T10:00:00Z"}`
const keysJSON = `{"data":[{"id":"key_0123456789ab","account_id":"acct_0123456789abcdef","name":"ci","created_at":"2026-11-01T10:00:00Z","expires_at":null,"revoked_at":null,"last_used_at":"2026-11-05T08:30:00Z","limits":{"requests_per_second":2},"effective_limits":{"requests_per_second":2,"source":"key"}},{"id":"key_00000000beef","account_id":"acct_0123456789abcdef","name":"old","created_at":"2026-01-01T10:00:00Z","expires_at":"2026-02-01T10:00:00Z","revoked_at":null,"effective_limits":{"max_concurrent":3,"source":"account"}},{"id":"key_ba9876543210","account_id":"acct_0123456789abcdef","name":"","created_at":"2026-11-01T10:00:00Z","expires_at":null,"revoked_at":"2026-11-02T10:00:00Z"}]}`
const modelsJSON = `{"data":[{"id":"llama-3.1-8b-instruct","aliases":["meta-llama/Llama-3.1-8B-Instruct"],"endpoint":"/v1/chat/completions","created":1721692800,"context_tokens":131072,"tokenizer":"meta-llama/Llama-3.1-8B-Instruct","input_ore_per_million_tokens":150,"output_ore_per_million_tokens":300,"routes":[{"id":"sim-se-llama","model":"llama-3.1-8b-instruct","provider":"simulator","base_url":"http://127.0.0.1:8090/v1","protocols":["/v1/chat/completions"],"translate":true,"region":"se-sto","country":"SE","priority":1,"weight":100}]}]}`
const discoveredRoutesJSON = `{"data":[{"id":"vllm-se","model":"llama-3.1-8b-instruct","provider":"vllm","base_url":"http://vllm.llm.svc.cluster.local:8000/v1","discovery":"dns","protocols":["/v1/chat/completions"],"region":"se-sto","country":"SE","priority":0,"weight":1,"problems":{},` +
	`"replicas":[{"id":"vllm-se@10.0.0.5:8000","address":"10.0.0.5:8000","breakers":{"node-a":"open"},"problems":{"node-a":"unreachable"}},` +
	`{"id":"vllm-se@10.0.0.6:8000","address":"10.0.0.6:8000","breakers":{"node-b":"half-open"},"problems":{}}]}]}`

const routesJSON = `{"data":[{"id":"sim-se-llama","model":"llama-3.1-8b-instruct","provider":"simulator","base_url":"http://127.0.0.1:8090/v1","protocols":["/v1/chat/completions","/v1/completions"],"translate":true,"region":"se-sto","country":"SE","priority":1,"weight":100,"allow_remote_media":true,"allow_extensions":["prompt_embeds","chat_template"]}]}`

func TestCommands(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		method     string
		path       string
		status     int
		answer     string
		wantBody   string   // JSON the CLI must send ("" = no body)
		wantOut    []string // substrings of the table output
		wantStderr string
	}{
		{"accounts create", []string{"accounts", "create", "--customer", "Demo AB", "--residency", "se"},
			"POST", "/admin/v1/accounts", 201, acctJSON, `{"customer":"Demo AB","residency":"se"}`,
			[]string{"ID:", "acct_0123456789abcdef", "Demo AB", "Balance:", "500.00 SEK", "llama-3.1-8b-instruct,nomic-embed-text-v1.5"}, ""},
		{"accounts create weighted", []string{"accounts", "create", "--customer", "Demo AB", "--residency", "se", "--queue-weight", "3"},
			"POST", "/admin/v1/accounts", 201, acctWeightedJSON, `{"customer":"Demo AB","residency":"se","queue_weight":3}`,
			[]string{"Queue weight:", "3"}, ""},
		{"accounts set-queue-weight", []string{"accounts", "set-queue-weight", "acct_0123456789abcdef", "3"}, "PATCH", "/admin/v1/accounts/acct_0123456789abcdef", 200, acctWeightedJSON,
			`{"queue_weight":3}`, []string{"Queue weight:", "3"}, ""},
		{"accounts list", []string{"accounts", "list"}, "GET", "/admin/v1/accounts", 200, `{"data":[` + acctJSON + `,` + acctSuspendedJSON + `]}`, "",
			[]string{"ID", "CUSTOMER", "RESIDENCY", "SUSPENDED", "BALANCE SEK", "QUEUE WEIGHT", "acct_0123456789abcdef", "500.00", "-1.50", "yes", "2026-11-01 10:00:00Z"}, ""},
		{"accounts get", []string{"accounts", "get", "acct_0123456789abcdef"}, "GET", "/admin/v1/accounts/acct_0123456789abcdef", 200, acctJSON, "",
			[]string{"Customer:", "Demo AB", "Residency:", "se"}, ""},
		{"accounts get limits", []string{"accounts", "get", "acct_0123456789abcdef"}, "GET", "/admin/v1/accounts/acct_0123456789abcdef", 200, acctLimitedJSON, "",
			[]string{"LIMITS", "OWN", "EFFECTIVE", "FROM", "requests  10 rps, burst 20  10 rps, burst 20  account"}, ""},
		{"accounts get default limits", []string{"accounts", "get", "acct_0123456789abcdef"}, "GET", "/admin/v1/accounts/acct_0123456789abcdef", 200, acctDefaultLimitsJSON, "",
			[]string{"requests - 100 rps, 8 in flight default"}, ""},
		{"accounts suspend", []string{"accounts", "suspend", "acct_0123456789abcdef", "--reason", "unpaid invoice"}, "PATCH", "/admin/v1/accounts/acct_0123456789abcdef", 200, acctSuspendedJSON,
			`{"suspended":true,"suspension_reason":"unpaid invoice"}`, []string{"Suspended:", "yes (unpaid invoice)"}, ""},
		{"accounts unsuspend", []string{"accounts", "unsuspend", "acct_0123456789abcdef"}, "PATCH", "/admin/v1/accounts/acct_0123456789abcdef", 200, acctJSON,
			`{"suspended":false}`, []string{"Suspended:", "no"}, ""},
		{"accounts set-residency", []string{"accounts", "set-residency", "acct_0123456789abcdef", "eu"}, "PATCH", "/admin/v1/accounts/acct_0123456789abcdef", 200, acctSuspendedJSON,
			`{"residency":"eu"}`, []string{"Residency:", "eu"}, ""},
		{"credit", []string{"credit", "acct_0123456789abcdef", "100", "--note", "welcome"}, "POST", "/admin/v1/accounts/acct_0123456789abcdef/credits", 200,
			`{"entry_id":42,"balance_micro_sek":600000000,"balance_sek":"600.00"}`, `{"amount_sek":"100.00","note":"welcome"}`,
			[]string{"Credited 100.00 SEK to acct_0123456789abcdef (ledger entry 42). Balance: 600.00 SEK"}, ""},
		{"credit with reference, already applied", []string{"credit", "acct_0123456789abcdef", "100", "--reference", "inv-7"}, "POST", "/admin/v1/accounts/acct_0123456789abcdef/credits", 200,
			`{"entry_id":42,"applied":false,"balance_micro_sek":600000000,"balance_sek":"600.00"}`, `{"amount_sek":"100.00","reference":"inv-7"}`,
			[]string{`Reference "inv-7" was already credited (ledger entry 42); nothing added. Balance: 600.00 SEK`}, ""},
		{"credit decimals", []string{"credit", "acct_0123456789abcdef", "0.015"}, "POST", "/admin/v1/accounts/acct_0123456789abcdef/credits", 200,
			`{"entry_id":43,"balance_micro_sek":15000,"balance_sek":"0.015"}`, `{"amount_sek":"0.015"}`, []string{"Credited 0.015 SEK"}, ""},
		{"keys create", []string{"keys", "create", "acct_0123456789abcdef", "--name", "ci", "--expires-in-days", "90"}, "POST", "/admin/v1/accounts/acct_0123456789abcdef/keys", 201, keyJSON,
			`{"name":"ci","expires_in_days":90}`, []string{"Key ID:", "key_0123456789ab", "Secret:", "sgw_0123456789ab_0123456789abcdef0123456789abcdef01234567", "2027-01-30"}, "cannot be shown again"},
		{"keys create bare", []string{"keys", "create", "acct_0123456789abcdef"}, "POST", "/admin/v1/accounts/acct_0123456789abcdef/keys", 201, keyJSON,
			`{}`, []string{"Secret:"}, "shown only now"},
		{"keys list", []string{"keys", "list", "acct_0123456789abcdef"}, "GET", "/admin/v1/accounts/acct_0123456789abcdef/keys", 200, keysJSON, "",
			[]string{"STATUS", "LAST USED", "key_0123456789ab", "active", "2026-11-05 08:30:00Z", "key_ba9876543210", "revoked", "2026-11-02 10:00:00Z",
				"EFFECTIVE LIMITS", "FROM", "2 rps 2 rps key", "key_00000000beef old expired", "- 3 in flight account"}, ""},
		{"keys revoke", []string{"keys", "revoke", "key_0123456789ab"}, "POST", "/admin/v1/keys/key_0123456789ab/revoke", 200,
			`{"id":"key_0123456789ab","account_id":"acct_0123456789abcdef","name":"ci","created_at":"2026-11-01T10:00:00Z","expires_at":null,"revoked_at":"2026-11-03T09:00:00Z"}`, "",
			[]string{"Revoked key key_0123456789ab of account acct_0123456789abcdef at 2026-11-03 09:00:00Z"}, ""},
		{"keys set-limits", []string{"keys", "set-limits", "key_0123456789ab", "--rps", "2.5", "--max-concurrent", "4"}, "PATCH", "/admin/v1/keys/key_0123456789ab", 200,
			`{"id":"key_0123456789ab","account_id":"acct_0123456789abcdef","name":"ci","created_at":"2026-11-01T10:00:00Z","expires_at":null,"revoked_at":null,"limits":{"requests_per_second":2.5,"max_concurrent":4},"effective_limits":{"requests_per_second":2.5,"max_concurrent":4,"source":"key"}}`,
			`{"limits":{"requests_per_second":2.5,"max_concurrent":4}}`, []string{"OWN LIMITS", "EFFECTIVE LIMITS", "FROM", "key_0123456789ab", "2.5 rps, 4 in flight  2.5 rps, 4 in flight  key"}, ""},
		{"keys set-limits clear", []string{"keys", "set-limits", "key_0123456789ab", "--clear"}, "PATCH", "/admin/v1/keys/key_0123456789ab", 200,
			`{"id":"key_0123456789ab","account_id":"acct_0123456789abcdef","name":"ci","created_at":"2026-11-01T10:00:00Z","expires_at":null,"revoked_at":null,"effective_limits":{"requests_per_second":10,"burst":20,"source":"account"}}`,
			`{"limits":null}`, []string{"key_0123456789ab", "- - - - 10 rps, burst 20 account"}, ""},
		{"accounts set-limits", []string{"accounts", "set-limits", "acct_0123456789abcdef", "--rps", "10", "--burst", "20"}, "PATCH", "/admin/v1/accounts/acct_0123456789abcdef", 200, acctJSON,
			`{"limits":{"requests_per_second":10,"burst":20}}`, []string{"acct_0123456789abcdef"}, ""},
		{"models enable", []string{"models", "enable", "acct_0123456789abcdef", "llama-3.1-8b-instruct", "meta-llama/Llama-3.1-8B-Instruct"}, "POST", "/admin/v1/accounts/acct_0123456789abcdef/models", 200, acctJSON,
			`{"models":["llama-3.1-8b-instruct","meta-llama/Llama-3.1-8B-Instruct"]}`, []string{"Enabled for acct_0123456789abcdef: llama-3.1-8b-instruct, meta-llama/Llama-3.1-8B-Instruct"}, ""},
		{"models disable alias with slash", []string{"models", "disable", "acct_0123456789abcdef", "meta-llama/Llama-3.1-8B-Instruct"}, "DELETE", "/admin/v1/accounts/acct_0123456789abcdef/models/meta-llama%2FLlama-3.1-8B-Instruct", 200, acctJSON,
			"", []string{"Disabled for acct_0123456789abcdef: meta-llama/Llama-3.1-8B-Instruct"}, ""},
		{"models disable empty answer", []string{"models", "disable", "acct_0123456789abcdef", "x"}, "DELETE", "/admin/v1/accounts/acct_0123456789abcdef/models/x", 204, "",
			"", []string{"Disabled for acct_0123456789abcdef: x"}, ""},
		{"models list", []string{"models", "list"}, "GET", "/admin/v1/models", 200, modelsJSON, "",
			[]string{"INPUT ÖRE/M", "llama-3.1-8b-instruct", "meta-llama/Llama-3.1-8B-Instruct", "/v1/chat/completions", "131072", "150", "300"}, ""},
		{"routes list", []string{"routes", "list"}, "GET", "/admin/v1/routes", 200, routesJSON, "",
			[]string{"BASE URL", "REMOTE MEDIA", "EXTENSIONS", "sim-se-llama", "se-sto", "SE", "/v1/chat/completions,/v1/completions",
				"prompt_embeds,chat_template", "http://127.0.0.1:8090/v1"}, ""},
		{"routes list with replicas", []string{"routes", "list"}, "GET", "/admin/v1/routes", 200, discoveredRoutesJSON, "",
			[]string{"vllm-se", "http://vllm.llm.svc.cluster.local:8000/v1 (dns)", "vllm-se@10.0.0.5:8000", "10.0.0.5:8000",
				"node-a: breaker open, unreachable", "vllm-se@10.0.0.6:8000", "node-b: breaker half-open"}, ""},
		{"models set-prices", []string{"models", "set-prices", "meta/llama", "--input", "120", "--output", "0"}, "PATCH", "/admin/v1/models/meta%2Fllama", 200,
			`{"id":"meta/llama","endpoint":"/v1/chat/completions","input_ore_per_million_tokens":120,"output_ore_per_million_tokens":0,"aliases":[],"routes":[]}`,
			`{"input_ore_per_million_tokens":120,"output_ore_per_million_tokens":0}`, []string{"INPUT ÖRE/M", "OUTPUT ÖRE/M", "meta/llama  120  0  0"}, ""},
		{"models set-prices output only", []string{"models", "set-prices", "m", "--output", "300"}, "PATCH", "/admin/v1/models/m", 200,
			`{"id":"m","endpoint":"/v1/chat/completions","input_ore_per_million_tokens":150,"output_ore_per_million_tokens":300,"aliases":[],"routes":[]}`,
			`{"output_ore_per_million_tokens":300}`, []string{"m  150  300"}, ""},
		{"routes set-weight", []string{"routes", "set-weight", "sim-se-llama", "4"}, "PATCH", "/admin/v1/routes/sim-se-llama", 200, routeEditedJSON("enabled"),
			`{"weight":4}`, []string{"ID  MODEL  PRIORITY  WEIGHT  STATE", "sim-se-llama  llama  0  4  enabled"}, ""},
		{"routes set-priority", []string{"routes", "set-priority", "sim-se-llama", "--", "-2"}, "PATCH", "/admin/v1/routes/sim-se-llama", 200, routeEditedJSON("enabled"),
			`{"priority":-2}`, []string{"sim-se-llama"}, ""},
		{"routes disable", []string{"routes", "disable", "sim-se-llama"}, "PATCH", "/admin/v1/routes/sim-se-llama", 200, routeEditedJSON("disabled"),
			`{"state":"disabled"}`, []string{"sim-se-llama  llama  0  4  disabled"}, ""},
		{"routes drain", []string{"routes", "drain", "sim-se-llama"}, "PATCH", "/admin/v1/routes/sim-se-llama", 200, routeEditedJSON("draining"),
			`{"state":"draining"}`, []string{"sim-se-llama  llama  0  4  draining"}, ""},
		{"routes enable", []string{"routes", "enable", "sim-se-llama"}, "PATCH", "/admin/v1/routes/sim-se-llama", 200, routeEditedJSON("enabled"),
			`{"state":"enabled"}`, []string{"sim-se-llama  llama  0  4  enabled"}, ""},
		{"nodes list", []string{"nodes", "list"}, "GET", "/admin/v1/nodes", 200, `{"data":[{"node_id":"local-1","applied_version":7,"last_seen":"2026-11-01T10:00:00Z","region":"se-sto","spool_age_ms":2540,"spool_reported_at":"2026-11-01T10:00:00Z","limits_mode":"fallback","start_feed":"split"},{"node_id":"local-2","applied_version":7,"last_seen":"2026-11-01T10:00:00Z","region":"","spool_age_ms":0,"spool_reported_at":null}]}`, "",
			[]string{"REGION", "APPLIED VERSION", "SPOOL AGE", "local-1", "se-sto", "7", "2026-11-01 10:00:00Z", "ago", "2.5s", "local-2", "LIMITS", "fallback", "START FEED", "split"}, ""},
		{"nodes rejected", []string{"nodes", "rejected", "--limit", "5"}, "GET", "/admin/v1/rejected-records", 200,
			`{"data":[{"id":3,"request_id":"req_1","account_id":"acct_0123456789abcdef","node_id":"local-1","batch_id":"b9","reason":"price_mismatch: price_micro_sek 7","record":"{}","received_at":"2026-11-01T10:00:00Z"}],"total":12}`, "",
			[]string{"REASON", "local-1", "req_1", "price_mismatch: price_micro_sek 7", "2026-11-01 10:00:00Z", "1 of 12 refused records shown"}, ""},
		{"snapshot", []string{"snapshot"}, "GET", "/admin/v1/snapshot", 200, `{"version":7,"hash":"abc123","generated_at":"2026-11-01T10:00:00Z"}`, "",
			[]string{"Version:", "7", "Hash:", "abc123"}, ""},
	}
	for _, tt := range tests {
		for _, jsonMode := range []bool{false, true} {
			name := tt.name
			if jsonMode {
				name += " --json"
			}
			t.Run(name, func(t *testing.T) {
				f, srv := newFakeAdmin(t)
				f.on(tt.method, tt.path, tt.status, tt.answer)
				args := tt.args
				if jsonMode {
					args = append([]string{"--json"}, args...)
				}
				code, out, errOut := runCLI(t, srv, args...)
				if code != 0 {
					t.Fatalf("exit %d, stderr %q", code, errOut)
				}
				if len(f.got) != 1 {
					t.Fatalf("%d requests, want 1: %+v", len(f.got), f.got)
				}
				got := f.got[0]
				if got.method != tt.method || got.path != tt.path || got.auth != "Bearer "+token {
					t.Errorf("request %s %s auth %q, want %s %s", got.method, got.path, got.auth, tt.method, tt.path)
				}
				if tt.wantBody == "" {
					if got.body != "" {
						t.Errorf("unexpected body %s", got.body)
					}
				} else {
					var gb, wb any
					if err := json.Unmarshal([]byte(got.body), &gb); err != nil || got.contentType != "application/json" {
						t.Fatalf("body %q (%s): %v", got.body, got.contentType, err)
					}
					json.Unmarshal([]byte(tt.wantBody), &wb)
					if d := cmp.Diff(wb, gb); d != "" {
						t.Errorf("body (-want +got):\n%s", d)
					}
				}
				if jsonMode {
					want := "{}\n"
					if tt.answer != "" {
						var buf bytes.Buffer
						json.Indent(&buf, []byte(tt.answer), "", "  ")
						want = buf.String() + "\n"
					}
					if out != want {
						t.Errorf("--json output\n%s\nwant\n%s", out, want)
					}
				} else {
					for _, s := range tt.wantOut {
						if !strings.Contains(out, s) && !strings.Contains(spaced(out), spaced(s)) {
							t.Errorf("output lacks %q:\n%s", s, out)
						}
					}
				}
				if !strings.Contains(errOut, tt.wantStderr) {
					t.Errorf("stderr %q lacks %q", errOut, tt.wantStderr)
				}
			})
		}
	}
}

// spaced collapses runs of spaces, so a table's cells can be asserted in order whatever
// the widths of their columns.
func spaced(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == ' ' }), " ")
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		status    int
		answer    string
		wantErr   []string
		wantCalls int
	}{
		{"envelope message", []string{"accounts", "get", "acct_x"}, 404,
			`{"error":{"type":"not_found_error","message":"account acct_x not found","code":"account_not_found","param":null}}`,
			[]string{"get account acct_x", "404 Not Found: account acct_x not found", "type not_found_error", "code account_not_found"}, 1},
		{"bad param", []string{"accounts", "create", "--customer", "X", "--residency", "se"}, 400,
			`{"error":{"type":"invalid_request_error","message":"customer too long","code":null,"param":"customer"}}`,
			[]string{"400 Bad Request: customer too long", "param customer"}, 1},
		{"token refused", []string{"accounts", "list"}, 401,
			`{"error":{"type":"authentication_error","message":"invalid admin token","code":null,"param":null}}`,
			[]string{"invalid admin token", "check --token"}, 1},
		{"not an envelope", []string{"snapshot"}, 502, `upstream down`, []string{"502 Bad Gateway: upstream down"}, 1},
		{"not JSON on success", []string{"snapshot"}, 200, `<html>`, []string{"not JSON"}, 1},
		{"bad residency", []string{"accounts", "create", "--customer", "X", "--residency", "us"}, 200, `{}`, []string{"--residency \"us\": want se, eu or any"}, 0},
		{"queue weight 0", []string{"accounts", "create", "--customer", "X", "--residency", "se", "--queue-weight", "0"}, 200, `{}`, []string{"want a whole number from 1 to 100"}, 0},
		{"set-queue-weight 101", []string{"accounts", "set-queue-weight", "acct_x", "101"}, 200, `{}`, []string{"want a whole number from 1 to 100"}, 0},
		{"set-queue-weight fraction", []string{"accounts", "set-queue-weight", "acct_x", "2.5"}, 200, `{}`, []string{"want a whole number from 1 to 100"}, 0},
		{"missing customer", []string{"accounts", "create", "--residency", "se"}, 200, `{}`, []string{"--customer is required"}, 0},
		{"set-residency bad", []string{"accounts", "set-residency", "acct_x", "nordic"}, 200, `{}`, []string{"want se, eu or any"}, 0},
		{"credit not decimal", []string{"credit", "acct_x", "1e3"}, 200, `{}`, []string{"exact decimal"}, 0},
		{"credit zero", []string{"credit", "acct_x", "0.00"}, 200, `{}`, []string{"must be positive"}, 0},
		{"credit negative", []string{"credit", "acct_x", "--", "-5"}, 200, `{}`, []string{"must be positive"}, 0},
		{"expiry out of range", []string{"keys", "create", "acct_x", "--expires-in-days", "10"}, 200, `{}`, []string{"want 30 to 365"}, 0},
		{"missing args", []string{"keys", "revoke"}, 200, `{}`, []string{"accepts 1 arg"}, 0},
		{"limits without values", []string{"keys", "set-limits", "key_0123456789ab"}, 200, `{}`, []string{"give --rps"}, 0},
		{"suspend without a reason", []string{"accounts", "suspend", "acct_x"}, 200, `{}`, []string{"--reason is required"}, 0},
		{"suspend with a blank reason", []string{"accounts", "suspend", "acct_x", "--reason", "  "}, 200, `{}`, []string{"--reason is required"}, 0},
		{"limits clear and values", []string{"accounts", "set-limits", "acct_x", "--clear", "--rps", "1"}, 200, `{}`, []string{"cannot be combined"}, 0},
		{"since in words", []string{"records", "--since", "10 minutes"}, 200, `{}`, []string{`invalid argument "10 minutes" for "--since"`, "use Go durations such as 10m, 1h30m"}, 0},
		{"unknown command", []string{"frobnicate"}, 200, `{}`, []string{"unknown command"}, 0},
		{"set-prices negative", []string{"models", "set-prices", "m", "--input=-1"}, 200, `{}`, []string{"--input -1: want a whole number"}, 0},
		{"set-prices nothing", []string{"models", "set-prices", "m"}, 200, `{}`, []string{"give --input, --output or both"}, 0},
		{"set-prices fraction", []string{"models", "set-prices", "m", "--output", "1.5"}, 200, `{}`, []string{"invalid argument"}, 0},
		{"set-weight zero", []string{"routes", "set-weight", "r", "0"}, 200, `{}`, []string{`weight "0": want a whole number of at least 1`}, 0},
		{"set-weight word", []string{"routes", "set-weight", "r", "heavy"}, 200, `{}`, []string{`weight "heavy"`}, 0},
		{"drain without a route", []string{"routes", "drain"}, 200, `{}`, []string{"accepts 1 arg"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFakeAdmin(t)
			for _, p := range []string{"/admin/v1/accounts/acct_x", "/admin/v1/accounts", "/admin/v1/snapshot"} {
				for _, m := range []string{"GET", "POST"} {
					f.on(m, p, tt.status, tt.answer)
				}
			}
			code, out, errOut := runCLI(t, srv, tt.args...)
			if code == 0 {
				t.Fatalf("exit 0, want failure; out %q", out)
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(errOut, s) {
					t.Errorf("stderr %q lacks %q", errOut, s)
				}
			}
			if len(f.got) != tt.wantCalls {
				t.Errorf("%d requests, want %d", len(f.got), tt.wantCalls)
			}
		})
	}
}

func TestFlagsAndEnv(t *testing.T) {
	f, srv := newFakeAdmin(t)
	f.on("GET", "/admin/v1/snapshot", 200, `{"version":1,"hash":"h","generated_at":"2026-11-01T10:00:00Z"}`)
	// Flags win over the environment.
	var out, errOut bytes.Buffer
	env := map[string]string{"GATEWAY_ADMIN_URL": "http://127.0.0.1:1", "GATEWAY_ADMIN_TOKEN": "from-env"}
	code := run(context.Background(), []string{"--admin-url", srv.URL, "--admin-token", "from-flag", "snapshot"}, &out, &errOut, func(k string) string { return env[k] })
	if code != 0 || f.got[0].auth != "Bearer from-flag" {
		t.Fatalf("exit %d auth %q stderr %q", code, f.got[0].auth, errOut.String())
	}
	// --help never shows the token from the environment.
	out.Reset()
	run(context.Background(), []string{"--help"}, &out, &errOut, func(k string) string { return env[k] })
	if strings.Contains(out.String(), "from-env") {
		t.Errorf("--help shows the admin token:\n%s", out.String())
	}
	// Unreachable control plane: a hint.
	errOut.Reset()
	code = run(context.Background(), []string{"snapshot"}, &out, &errOut, func(k string) string { return env[k] })
	if code == 0 || !strings.Contains(errOut.String(), "is the control plane running at http://127.0.0.1:1") {
		t.Errorf("exit %d stderr %q", code, errOut.String())
	}
	errOut.Reset()
	code = run(context.Background(), []string{"--admin-url", "ftp://x", "snapshot"}, &out, &errOut, func(string) string { return "" })
	if code == 0 || !strings.Contains(errOut.String(), "want http(s)://host") {
		t.Errorf("bad URL: exit %d stderr %q", code, errOut.String())
	}
}

func TestCatalogLoad(t *testing.T) {
	f, srv := newFakeAdmin(t)
	f.on("PUT", "/admin/v1/catalog", 200, `{"models":1,"routes":2}`)
	dir := t.TempDir()
	file := filepath.Join(dir, "cat.yaml")
	os.WriteFile(file, []byte(`# a comment
models:
  - id: llama-3.1-8b-instruct
    aliases: ["meta-llama/Llama-3.1-8B-Instruct"]
    endpoint: /v1/chat/completions
    created: 1721692800
    context_tokens: 131072
    input_ore_per_million_tokens: 150
    output_ore_per_million_tokens: 300
    routes:
      - id: sim-se-1
        provider: simulator
        base_url: http://127.0.0.1:8090/v1
        protocols: [/v1/chat/completions]
        translate: true
        region: se-sto
        country: SE
        priority: 1
        weight: 100
      - id: sim-se-2
        provider: simulator
        base_url: http://127.0.0.1:8091/v1
        credentials_ref: env:GATEWAY_CREDENTIAL_SIM
        protocols: [/v1/chat/completions]
        region: se-got
        country: SE
        priority: 2
        weight: 50
        first_byte_timeout_ms: 5000
        allow_remote_media: true
        allow_extensions: [prompt_embeds]
`), 0o600)
	code, out, errOut := runCLI(t, srv, "catalog", "load", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "2 routes") {
		t.Errorf("output %q", out)
	}
	var sent map[string]any
	if err := json.Unmarshal([]byte(f.got[0].body), &sent); err != nil {
		t.Fatal(err)
	}
	m := sent["models"].([]any)[0].(map[string]any)
	r2 := m["routes"].([]any)[1].(map[string]any)
	if m["id"] != "llama-3.1-8b-instruct" || m["context_tokens"] != float64(131072) || m["aliases"].([]any)[0] != "meta-llama/Llama-3.1-8B-Instruct" ||
		r2["credentials_ref"] != "env:GATEWAY_CREDENTIAL_SIM" || r2["first_byte_timeout_ms"] != float64(5000) || r2["priority"] != float64(2) ||
		r2["allow_remote_media"] != true || r2["allow_extensions"].([]any)[0] != "prompt_embeds" {
		t.Errorf("sent %s", f.got[0].body)
	}

	// Refused before sending, placed in the file: unknown field, wrong type, no models,
	// missing IDs, an invalid value, no file.
	for _, bad := range []struct{ src, want string }{
		{"models:\n  - id: m\n    input_ore_per_milion_tokens: 1\n",
			`:3:5: models[0]: unknown field "input_ore_per_milion_tokens" in model; did you mean "input_ore_per_million_tokens"?`},
		{"models:\n  - id: m\n    context_tokens: 8k\n", `:3:21: models[0].context_tokens: must be an integer, got "8k"`},
		{"models: []\n", `: no models: want a top-level "models" list`},
		{"", `: the catalogue is empty`},
		{"models:\n  - endpoint: /v1/chat/completions\n", `:2:5: models[0].id: model id must be 1 to 200 printable characters without spaces`},
		{"models:\n  - id: m\n    endpoint: /v1/chat/completions\n    routes:\n      - provider: x\n",
			`:5:9: models[0].routes[0].id: route id must be 1 to 200 printable characters without spaces`},
		{"{\"models\": [{\"id\": \"m\",\n \"endpoint\": \"/v1/chat/completions\", \"routes\": {}}]}", `:2:48: models[0].routes: must be a list, got an object`},
		{"models:\n  - id: m\n    endpoint: /v1/chat/completions\n    routing: round_robin\n",
			`:4:14: models[0].routing: unknown routing "round_robin"; known: scored, weighted, least_load, affinity`},
	} {
		os.WriteFile(file, []byte(bad.src), 0o600)
		before := len(f.got)
		code, _, errOut := runCLI(t, srv, "catalog", "load", file)
		if want := "gatewayctl: " + file + bad.want + "\n"; code == 0 || errOut != want || len(f.got) != before {
			t.Errorf("%q: exit %d, %d requests sent, stderr\n %q\nwant\n %q", bad.src, code, len(f.got)-before, errOut, want)
		}
	}
	if code, _, errOut := runCLI(t, srv, "catalog", "load", filepath.Join(dir, "missing.yaml")); code == 0 || !strings.Contains(errOut, "read catalogue") {
		t.Errorf("missing file: %d %q", code, errOut)
	}
}

func TestCatalogFilesInRepo(t *testing.T) {
	for _, name := range []string{"catalog.demo.yaml", "catalog.example.yaml"} {
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("..", "..", "configs", name))
			if err != nil {
				t.Fatal(err)
			}
			if _, n, err := CatalogJSON(name, src); err != nil || n == 0 {
				t.Fatalf("%s: %d models, %v", name, n, err)
			}
		})
	}
}

// FuzzCatalogJSON: any file either is refused with an error or becomes valid JSON with a
// models list.
func FuzzCatalogJSON(f *testing.F) {
	for _, name := range []string{"catalog.demo.yaml", "catalog.example.yaml"} {
		if b, err := os.ReadFile(filepath.Join("..", "..", "configs", name)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("models:\n  - id: m\n    routes: [{id: r, weight: 1}]\n"))
	f.Add([]byte(`{"models":[{"id":"m","aliases":["a/b"]}]}`))
	f.Add([]byte("models:\n  - id: m\n    extra: {1: 2}\n"))
	f.Add([]byte("- a\n- b\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		out, n, err := CatalogJSON("fuzz.yaml", src)
		if err != nil {
			return
		}
		var v struct {
			Models []map[string]any `json:"models"`
		}
		if json.Unmarshal(out, &v) != nil || len(v.Models) != n || n == 0 {
			t.Fatalf("%q -> %s (%d models)", src, out, n)
		}
	})
}

func TestVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"--version"}, &out, &errOut, func(string) string { return "" })
	if code != 0 || !strings.HasPrefix(out.String(), "gatewayctl ") || !strings.Contains(out.String(), " revision ") {
		t.Fatalf("--version: code %d, out %q, err %q", code, out.String(), errOut.String())
	}
}

// routeEditedJSON is the answer to a route patch, the route in the given state.
func routeEditedJSON(state string) string {
	return `{"id":"sim-se-llama","model":"llama","provider":"sim","base_url":"http://127.0.0.1:8090/v1","protocols":["/v1/chat/completions"],` +
		`"translate":false,"region":"se-sto","country":"SE","priority":0,"weight":4,"state":"` + state + `"}`
}
