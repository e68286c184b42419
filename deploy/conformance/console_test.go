package conformance

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/sekgate/gateway/internal/poll"
)

// The operator console driven in headless Chromium against the running stack:
// log in, create an account and a key (the secret shown once), credit, a test-box request
// recorded with key_id null and charged, revoke the key and see the data plane refuse it,
// approve a signup, a viewer who cannot change anything, and the audit log of it all.
//
// Screenshots of the main pages go to the stack's log folder, or to the folder named by
// CONSOLE_SCREENSHOTS (make console-screenshots writes docs/console).
func TestConsole_Browser(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	shots := screenshotDir(t, s)
	const adminPW, viewerPW = "console admin password", "console viewer password"
	s.Admin(t, "POST", "/admin/v1/operators", map[string]any{"name": "console-admin", "role": "admin", "password": adminPW})
	s.Admin(t, "POST", "/admin/v1/operators", map[string]any{"name": "console-viewer", "role": "viewer", "password": viewerPW})
	// A signup to approve, and a route's worth of usage for the charts come from the steps.
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	if r := s.Do(t, "POST", "/v1/service/signup", "", form,
		[]byte("name=Grace+Hopper&email=grace%40console.example&company=Console+Browser+AB&residency=se&volume=10M%2Fday&use_case=compilers&consent=yes&website=")); r.Status != 303 {
		t.Fatalf("signup: %d %s", r.Status, r.Body)
	}

	ctx := browser(t, 900)
	// Revoke, reject and suspend ask for confirmation, naming what they act on: accept.
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	var dialogMu sync.Mutex
	var asked []string
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			dialogMu.Lock()
			asked = append(asked, ev.Message)
			dialogMu.Unlock()
			go func() {
				_ = chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
					_, err := cdp.Call(ctx, tg, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
					return err
				}))
			}()
		}
	}()
	base := s.AdminURL + "/console"
	within := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 60*time.Second) }
	run := stepRunner(t, ctx)
	text := func(sel string) string {
		t.Helper()
		c, cancel := within()
		defer cancel()
		v, err := chromedp.Run(c, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return strings.TrimSpace(v)
	}
	eval := func(js string) string {
		t.Helper()
		c, cancel := within()
		defer cancel()
		v, err := chromedp.Run(c, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("evaluate %.80s: %v", js, err)
		}
		return v
	}
	exists := func(sel string) bool {
		t.Helper()
		return eval(fmt.Sprintf(`document.querySelector(%q) !== null ? "yes" : "no"`, sel)) == "yes"
	}
	shot := func(name string) {
		t.Helper()
		c, cancel := within()
		defer cancel()
		b, err := chromedp.Run(c, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := writePNG(filepath.Join(shots, name+".png"), b); err != nil {
			t.Fatal(err)
		}
	}
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	// waitText waits until the element's text contains want (a form's answer replaces
	// the page, which may have had an element of the same ID).
	waitText := func(sel, want string) string {
		t.Helper()
		var got string
		if poll.WaitEvery(45*time.Second, 100*time.Millisecond, func() bool {
			got = eval(fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel))
			return strings.Contains(got, want) && eval(`document.readyState`) == "complete"
		}) {
			return strings.TrimSpace(got)
		}
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("main")))
		t.Fatalf("%s says %q, want %q (at %s)\n%.2000s", sel, got, want, loc, html)
		return ""
	}
	login := func(name, pw string) {
		t.Helper()
		run("log in as "+name,
			chromedp.Navigate(base+"/login"),
			chromedp.WaitVisible(css("#name")),
			chromedp.SendKeys(css("#name"), name),
			chromedp.SendKeys(css("#password"), pw),
			chromedp.Click(css("#login")),
			chromedp.WaitVisible(css("#whoami")))
	}

	// A wrong password is refused; the login page is what the screenshot shows.
	run("login page", chromedp.Navigate(base+"/accounts"), chromedp.WaitVisible(css("#name")))
	shot("login")
	run("wrong password", chromedp.SendKeys(css("#name"), "console-admin"),
		chromedp.SendKeys(css("#password"), "not the password"),
		chromedp.Click(css("#login")), chromedp.WaitVisible(css("#error")))
	login("console-admin", adminPW)
	if who := text("#whoami"); who != "console-admin (admin)" {
		t.Fatalf("logged in as %q", who)
	}
	// The session cookie is HttpOnly, Secure and SameSite=Strict: page script cannot read it.
	cookies := eval(`document.cookie`)
	if strings.Contains(cookies, "gw_console") {
		t.Fatalf("session cookie readable by script: %q", cookies)
	}

	// Create an account.
	run("create account",
		chromedp.Navigate(base+"/accounts"),
		chromedp.WaitVisible(css("#customer")),
		chromedp.SendKeys(css("#customer"), "Console Browser Test AB"),
		chromedp.SetValue(css("#residency"), "se"),
		chromedp.Submit(css("#create-account")),
		chromedp.WaitVisible(css("#account-id")))
	acct := text("#account-id")
	if !strings.HasPrefix(acct, "acct_") {
		t.Fatalf("account ID %q", acct)
	}
	// Enable the chat model and credit 100 SEK.
	run("enable model",
		chromedp.SetValue(css(`#enable-model select`), modelChat),
		chromedp.Submit(css("#enable-model")))
	waitText("#notice", "Model enabled")
	run("credit",
		chromedp.SendKeys(css("#credit-amount"), "1 250,50"), // as a Swedish operator types it
		chromedp.SendKeys(css("#credit-reason"), "browser test credit"),
		chromedp.Submit(css("#credit-form")))
	waitText("#notice", "Credited")
	if b := text("#balance"); b != "1,250.50 SEK" {
		t.Fatalf("after credit: balance %q", b)
	}
	// Create a key: the secret is shown once, with a copy button.
	run("create key",
		chromedp.SendKeys(css("#key-name"), "browser"),
		chromedp.Submit(css("#create-key")),
		chromedp.WaitVisible(css("#secret")))
	secret := text("#secret")
	if !strings.HasPrefix(secret, "sgw_") || !exists("button.copy") {
		t.Fatalf("key secret %q", secret)
	}
	keyID := "key_" + secret[4:16]
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(loc, secret) {
		t.Fatal("secret in the URL")
	}
	// The form ended with a redirect: reloading the page creates no second key.
	run("reload after create key", chromedp.Reload(), chromedp.WaitVisible(css("#account-id")))
	if keys := s.Admin(t, "GET", "/admin/v1/accounts/"+acct+"/keys", nil)["data"].([]any); len(keys) != 1 {
		t.Fatalf("%d keys after reloading the page that created one", len(keys))
	}
	run("reload account", chromedp.Navigate(base+"/accounts/"+acct), chromedp.WaitVisible(css("#account-id")))
	if exists("#secret") {
		t.Fatal("the secret is shown a second time")
	}
	key := Account{ID: acct, Key: secret, KeyID: keyID}
	s.waitFor(t, "key accepted", func() bool { return s.Do(t, "GET", "/v1/models", secret, nil, nil).Status == 200 })
	s.waitSpendable(t, key)
	if r := s.Post(t, "/v1/chat/completions", secret, chatReq(modelChat)); r.Status != 200 {
		t.Fatalf("chat with the new key: %d %s", r.Status, r.Body)
	}

	// Test box: a chat request on behalf of the account, recorded with key_id null and charged.
	run("test box",
		chromedp.Navigate(base+"/accounts/"+acct),
		chromedp.WaitVisible(css("#test-box")),
		chromedp.SetValue(css("#tb-model"), modelChat),
		chromedp.Submit(css("#test-box")),
		chromedp.WaitVisible(css("#test-box-result")))
	reqID := text("#tb-request")
	if !strings.Contains(text("#test-box-result"), "Status 200") || reqID == "" {
		t.Fatalf("test box: %q", text("#test-box-result"))
	}
	recURL := base + "/records?" + url.Values{"account_id": {acct}, "key_id": {"none"}}.Encode()
	s.waitFor(t, "test-box record", func() bool {
		run("records", chromedp.Navigate(recURL), chromedp.WaitVisible(css("table.records")))
		return exists("#rec-" + reqID)
	})
	if k := text("#rec-" + reqID + " .keyid"); !strings.HasPrefix(k, "null") {
		t.Fatalf("test-box record key: %q", k)
	}
	rec := s.Admin(t, "GET", "/admin/v1/records/"+reqID, nil)
	if rec["key_id"] != nil || rec["account_id"] != acct || rec["price_micro_sek"].(float64) <= 0 {
		t.Fatalf("test-box record %v", rec)
	}
	// Charged like any other: the balance is the credit less the prices of all the
	// account's records (the test box's included).
	var spent float64
	for _, r := range s.Admin(t, "GET", "/admin/v1/records?account_id="+acct, nil)["data"].([]any) {
		spent += r.(map[string]any)["price_micro_sek"].(float64)
	}
	if bal := s.Admin(t, "GET", "/admin/v1/accounts/"+acct, nil)["balance_micro_sek"].(float64); bal != 1_250_500_000-spent || spent < rec["price_micro_sek"].(float64) {
		t.Fatalf("balance %v after a 1,250.50 SEK credit and records costing %v micro-SEK", bal, spent)
	}
	run("account page", chromedp.Navigate(base+"/accounts/"+acct), chromedp.WaitVisible(css("svg.chart")))
	shot("account")

	// Revoke the key; the data plane refuses it within seconds.
	run("revoke", chromedp.Click(css("#key-"+keyID+" button.revoke")))
	s.waitFor(t, "the revoke confirmation", func() bool {
		dialogMu.Lock()
		defer dialogMu.Unlock()
		return slices.ContainsFunc(asked, func(m string) bool {
			return strings.HasPrefix(m, "Revoke key "+keyID+" (browser) of Console Browser Test AB?")
		})
	})
	waitText("#notice", "Key "+keyID+" revoked")
	revoked := time.Now()
	s.waitFor(t, "revoked key refused", func() bool {
		return s.Post(t, "/v1/chat/completions", secret, chatReq(modelChat)).Status == http.StatusUnauthorized
	})
	t.Logf("revoked key refused by the data plane %v after the console's answer", time.Since(revoked).Round(time.Millisecond))

	// Approve the signup, creating its account.
	run("signups", chromedp.Navigate(base+"/signups"), chromedp.WaitVisible(css("table")))
	shot("signups")
	signupRow := eval(`[...document.querySelectorAll("tr[id^=signup-]")].find(r => r.textContent.includes("grace@console.example")).id`)
	run("approve", chromedp.Click(css("#"+signupRow+" button.approve")))
	waitText("#notice", "approved; account acct_")

	// The other pages.
	for _, p := range []struct{ path, name, sel string }{
		{"/accounts", "accounts", "table"},
		{"/catalogue", "catalogue", "table"},
		{"/nodes", "nodes", "table"},
		{"/records?account_id=" + acct, "records", "table.records"},
	} {
		run(p.name, chromedp.Navigate(base+p.path), chromedp.WaitVisible(css(p.sel)))
		shot(p.name)
	}
	if !strings.Contains(text("table.records"), "chat-se") {
		t.Fatal("records page shows no routing detail")
	}
	// A catalogue file's changes are previewed before anything is applied.
	catFile := filepath.Join(t.TempDir(), "catalogue.yaml")
	_ = os.WriteFile(catFile, []byte("models:\n- id: "+modelEU+"\n  endpoint: /v1/chat/completions\n  input_ore_per_million_tokens: 2500\n  output_ore_per_million_tokens: 6000\n  routes:\n  - {id: chat-de, provider: sim-de, base_url: "+s.SimURL+"/v1, region: de-fra-1, country: DE, priority: 0, weight: 1, protocols: [/v1/chat/completions]}\n"), 0o600)
	run("catalogue preview", chromedp.Navigate(base+"/catalogue"), chromedp.WaitVisible(css("#catalogue-form")),
		chromedp.SetUploadFiles(css(`#catalogue-form input[type=file]`), []string{catFile}),
		chromedp.Submit(css("#catalogue-form")), chromedp.WaitVisible(css("#diff")))
	if d := text("#diff"); !strings.Contains(d, "changed") || !strings.Contains(d, "2000 → 2500") {
		t.Fatalf("catalogue diff: %q", d)
	}
	shot("catalogue-preview")

	// A viewer sees no forms, and the API refuses a change the viewer posts anyway.
	run("log out", chromedp.Click(css("header form button")), chromedp.WaitVisible(css("#name")))
	login("console-viewer", viewerPW)
	run("viewer account page", chromedp.Navigate(base+"/accounts/"+acct), chromedp.WaitVisible(css("#account-id")))
	for _, sel := range []string{"#credit-form", "#create-key", "#test-box", "button.revoke", "#suspend"} {
		if exists(sel) {
			t.Errorf("viewer sees %s", sel)
		}
	}
	if !exists("p.readonly") {
		t.Error("viewer is not told the page is read-only")
	}
	before := s.Admin(t, "GET", "/admin/v1/accounts/"+acct, nil)["balance_micro_sek"]
	status := eval(`(async () => {
		const csrf = document.querySelector("input[name=csrf]").value;
		const r = await fetch("/console/accounts/` + acct + `/credit", {method: "POST",
			body: new URLSearchParams({csrf, amount_sek: "5.00", reason: "viewer"})});
		const page = new DOMParser().parseFromString(await r.text(), "text/html");
		return (page.querySelector("#error") || {}).textContent || "";
	})()`)
	if !strings.Contains(status, "operator role") {
		t.Fatalf("viewer's credit answered %q", status)
	}
	if bal := s.Admin(t, "GET", "/admin/v1/accounts/"+acct, nil)["balance_micro_sek"]; bal != before {
		t.Fatal("the viewer's credit was applied")
	}

	// The overview shows the figures of a mixed load: a low-balance account that made
	// answered requests and one whose only route refuses connections.
	mixed := s.NewAccount(t, "se", 1, modelChat, modelDead)
	for range 2 {
		if r := s.Post(t, "/v1/chat/completions", mixed.Key, chatReq(modelChat)); r.Status != 200 {
			t.Fatalf("mixed load: %d %s", r.Status, r.Body)
		}
	}
	if r := s.Post(t, "/v1/chat/completions", mixed.Key, chatReq(modelDead)); r.Status < 500 {
		t.Fatalf("dead route answered %d", r.Status)
	}
	s.waitFor(t, "the mixed load's records", func() bool {
		recs, _ := s.listRecords(t, mixed, "")
		return len(recs) == 3
	})
	run("overview", chromedp.Navigate(base+"/overview"), chromedp.WaitVisible(css("#results")))
	shot("overview")
	if n, err := strconv.Atoi(text("#requests-today")); err != nil || n < 3 {
		t.Errorf("requests today %q", text("#requests-today"))
	}
	// The tiny test prices round to 0.00 on the card; its title holds the exact amount.
	if spend := eval(`document.querySelector("#spend-today").title`); !strings.HasSuffix(spend, " SEK exactly") || strings.HasPrefix(spend, "0.00 ") {
		t.Errorf("spend today %q (%q)", spend, text("#spend-today"))
	}
	if f, err := strconv.Atoi(text("#failed-today")); err != nil || f < 1 {
		t.Errorf("not ok today %q", text("#failed-today"))
	}
	if res := text("#results"); !strings.Contains(res, "ok") || !strings.Contains(res, "upstream_error") && !strings.Contains(res, "no_route") {
		t.Errorf("results today: %q", res)
	}
	if low := text("#low-balance"); !strings.Contains(low, t.Name()) {
		t.Errorf("low balances lack the 1 SEK account: %q", low)
	}
	if routes := text("#unhealthy-routes"); !strings.Contains(routes, "dead-se") {
		t.Errorf("routes with problems lack the dead route: %q", routes)
	}

	// The audit log reads in words: each change, and the viewer's refused one; times are UTC.
	// Each operator's entries are read through the page's actor filter: the conformance
	// tests beside this one change the catalogue too, and their entries may fill the page.
	run("audit", chromedp.Navigate(base+"/audit"), chromedp.WaitVisible(css("table.audit")))
	shot("audit")
	audit := ""
	for _, actor := range []string{"operator:console-admin", "operator:console-viewer"} {
		run("audit of "+actor, chromedp.Navigate(base+"/audit?actor="+url.QueryEscape(actor)), chromedp.WaitVisible(css("table.audit")))
		audit += text("table.audit")
	}
	for _, want := range []string{"console-admin created the account Console Browser Test AB (residency se)",
		"console-admin enabled " + modelChat + " for Console Browser Test AB",
		"console-admin credited Console Browser Test AB 1,250.50 SEK: browser test credit",
		"console-admin created the key " + keyID + " for Console Browser Test AB (browser)",
		"console-admin sent a test-box request", "console-admin revoked the key " + keyID, "console-admin approved the signup",
		"console-viewer tried: credited Console Browser Test AB 5.00 SEK: viewer (refused, 403)", "UTC"} {
		if !strings.Contains(audit, want) {
			t.Errorf("audit log page lacks %q", want)
		}
	}
}

// writePNG re-encodes a screenshot with the best compression (small files for the README).
func writePNG(path string, b []byte) error {
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&out, img); err != nil {
		return err
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}
