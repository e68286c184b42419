package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sekgate/gateway/controlplane/alerts"
	"github.com/sekgate/gateway/internal/poll"
)

// Budgets and alerts in the console, driven in headless Chromium against the running
// stack: an operator sets an account's budget and a key's on the account page and sees
// them with their spend; creates a low-balance alert rule on the Alerts page (its signing
// secret shown once) whose event reaches a webhook receiver the test runs, signed with that
// secret, once; and sees the delivery on the page. Screenshots as in TestConsole_Browser
// (account-budget.png, alerts.png).
func TestConsole_BudgetsAndAlerts(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	shots := screenshotDir(t, s)
	// The webhook receiver: it keeps every delivery.
	var mu sync.Mutex
	type delivery struct {
		header http.Header
		body   []byte
	}
	var got []delivery
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, delivery{r.Header.Clone(), b})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hook.Close()

	const pw = "budgets console operator password"
	s.Admin(t, "POST", "/admin/v1/operators", map[string]any{"name": "budget-operator", "role": "operator", "password": pw})
	a := s.NewAccount(t, "se", 0, modelChat)

	ctx := browser(t, 1000)
	acceptDialogs(ctx) // the forms ask before they act
	base := s.AdminURL + "/console"
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	run := stepRunner(t, ctx)
	eval := func(js string) string {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		v, err := chromedp.Run(c, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("evaluate %.80s: %v", js, err)
		}
		return v
	}
	// waitText waits until the element's text contains want, reloading with reload.
	waitText := func(sel, want string, within time.Duration, reload string) string {
		t.Helper()
		var txt string
		// A real browser page: look at it, and reload it, at most five times a second.
		if poll.WaitEvery(within, 200*time.Millisecond, func() bool {
			txt = eval(fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel))
			if strings.Contains(txt, want) && eval(`document.readyState`) == "complete" {
				return true
			}
			if reload != "" {
				run("reload", chromedp.Navigate(reload))
			}
			return false
		}) {
			return strings.TrimSpace(txt)
		}
		t.Fatalf("%s says %q, want %q", sel, txt, want)
		return ""
	}
	shot := func(name string) {
		t.Helper()
		b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := writePNG(filepath.Join(shots, name+".png"), b); err != nil {
			t.Fatal(err)
		}
	}

	run("log in", chromedp.Navigate(base+"/login"), chromedp.WaitVisible(css("#name")),
		chromedp.SendKeys(css("#name"), "budget-operator"), chromedp.SendKeys(css("#password"), pw),
		chromedp.Click(css("#login")), chromedp.WaitVisible(css("#whoami")))

	// The account's budget, then the key's.
	acctPage := base + "/accounts/" + a.ID
	run("account page", chromedp.Navigate(acctPage), chromedp.WaitVisible(css("#account-budget")))
	if card := waitText("#budget", "none", 5*time.Second, ""); !strings.Contains(card, "no spend cap") {
		t.Fatalf("budget card %q", card)
	}
	run("set account budget",
		chromedp.SendKeys(css(`#account-budget input[name="limit_sek"]`), "1 500,00"),
		chromedp.SetValue(css(`#account-budget select[name="period"]`), "week"),
		chromedp.Click(css(`#account-budget button:not(.danger)`)))
	waitText("#notice", "Budget of the account set: 1500.00 SEK per week", 45*time.Second, "")
	waitText("#budget", "0.00 of 1,500.00 SEK this week", 5*time.Second, "")
	row := fmt.Sprintf(`#key-%s`, a.KeyID)
	run("set key budget",
		chromedp.Click(css(row+` .key-budget summary`)),
		chromedp.SendKeys(css(row+` .key-budget-form input[name="limit_sek"]`), "20"),
		chromedp.SetValue(css(row+` .key-budget-form select[name="period"]`), "day"),
		chromedp.Click(css(row+` .key-budget-form button:not(.danger)`)))
	waitText("#notice", "Budget of key "+a.KeyID+" set: 20.00 SEK per day", 45*time.Second, "")
	waitText(row+" .key-budget", "0.00 / 20.00 SEK per day (0%)", 5*time.Second, "")
	shot("account-budget")

	// A low-balance rule for this account (its balance is 0): one signed event.
	run("alerts page", chromedp.Navigate(base+"/alerts"), chromedp.WaitVisible(css("#create-alert")),
		chromedp.SendKeys(css(`#create-alert input[name="name"]`), "low balance "+a.ID),
		chromedp.SetValue(css("#alert-kind"), "balance_below"),
		chromedp.SendKeys(css(`#create-alert input[name="threshold"]`), "50"),
		chromedp.SetValue(css(`#create-alert select[name="account_id"]`), a.ID),
		chromedp.SendKeys(css(`#create-alert input[name="webhook_url"]`), hook.URL+"/gateway"),
		chromedp.Submit(css("#create-alert")))
	secret := waitText("#rule-secret", "whsec_", 45*time.Second, "")
	// The control plane evaluates its rules every --alert-interval (30 s by default).
	var first delivery
	if !poll.Wait(75*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		if len(got) > 0 {
			first = got[0]
		}
		return len(got) > 0
	}) {
		t.Fatal("no alert reached the webhook receiver")
	}
	if err := alerts.Verify(secret, first.header.Get(alerts.HeaderSignature), first.body, time.Now(), 5*time.Minute); err != nil {
		t.Fatalf("signature: %v", err)
	}
	var ev alerts.Event
	if err := json.Unmarshal(first.body, &ev); err != nil || ev.Event != "firing" || ev.Subject != a.ID || ev.Rule.Kind != "balance_below" {
		t.Fatalf("event %+v %v: %s", ev, err, first.body)
	}
	waitText("#alert-deliveries", "delivered (204)", 45*time.Second, base+"/alerts")
	shot("alerts")
	mu.Lock()
	n := len(got)
	mu.Unlock()
	if n != 1 {
		t.Fatalf("%d deliveries of a standing condition, want 1", n)
	}
}
