package conformance

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Operator API tokens, driven in headless Chromium against the running stack: an operator
// opens API tokens from the header, makes a token and sees its secret once; the real
// gatewayctl binary uses it (whoami names the operator, a change is made); the audit log
// page names the operator and the token; revoking it in the console makes gatewayctl's
// next call fail as revoked. Screenshot tokens.png, as in TestConsole_Browser.
func TestConsole_Tokens(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	shots := screenshotDir(t, s)
	const pw = "tokens console operator password"
	s.Admin(t, "POST", "/admin/v1/operators", map[string]any{"name": "token-operator", "role": "operator", "password": pw})

	ctx := browser(t, 900)
	acceptDialogs(ctx) // the forms ask before they act
	base := s.AdminURL + "/console"
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	run := stepRunner(t, ctx)
	text := func(sel string) string {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		v, err := chromedp.Run(c, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel)))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return strings.TrimSpace(v)
	}
	gatewayctl := func(args ...string) (string, error) {
		var out bytes.Buffer
		cmd := exec.Command(filepath.Join(binDir, "gatewayctl"), append([]string{"--admin-url", s.AdminURL}, args...)...)
		cmd.Env = []string{"HOME=" + t.TempDir()} // no token from the environment or a file
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}

	run("log in", chromedp.Navigate(base+"/login"), chromedp.WaitVisible(css("#name")),
		chromedp.SendKeys(css("#name"), "token-operator"), chromedp.SendKeys(css("#password"), pw),
		chromedp.Click(css("#login")), chromedp.WaitVisible(css("#whoami")))
	run("open API tokens", chromedp.Click(css("#tokens-link")), chromedp.WaitVisible(css("#token-form")))
	if opts := text("#token-role"); !strings.Contains(opts, "operator") || strings.Contains(opts, "admin") {
		t.Fatalf("role choices of an operator: %q", opts)
	}
	run("make a token", chromedp.SendKeys(css("#token-name"), "laptop"),
		chromedp.Click(css("#token-form button[type=submit]")), chromedp.WaitVisible(css("#new-token")))
	secret := text("#secret")
	if !strings.HasPrefix(secret, "gwo_") || len(secret) != 68 {
		t.Fatalf("secret %q", secret)
	}
	if b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err != nil {
		t.Fatalf("screenshot: %v", err)
	} else if err := writePNG(filepath.Join(shots, "tokens.png"), b); err != nil {
		t.Fatal(err)
	}

	out, err := gatewayctl("--token", secret, "whoami")
	if err != nil || !strings.Contains(out, "token-operator") || !strings.Contains(out, "laptop") {
		t.Fatalf("gatewayctl whoami with the token: %v\n%s", err, out)
	}
	if out, err := gatewayctl("--token", secret, "accounts", "create", "--customer", "Token Browser AB", "--residency", "se"); err != nil {
		t.Fatalf("gatewayctl accounts create with the token: %v\n%s", err, out)
	}
	run("audit log", chromedp.Navigate(base+"/audit"), chromedp.WaitVisible(css("table.audit")))
	if audit := text("table.audit"); !strings.Contains(audit, "token-operator (token laptop) created the account Token Browser AB") ||
		!strings.Contains(audit, "token-operator made the API token laptop (operator)") {
		t.Fatalf("audit log page: %.2000s", audit)
	}
	run("revoke", chromedp.Navigate(base+"/tokens"), chromedp.WaitVisible(css("#tokens")),
		chromedp.Click(css("#tokens button.danger")), chromedp.WaitVisible(css("#notice")))
	if n := text("#notice"); !strings.Contains(n, "revoked") {
		t.Fatalf("notice after revoking: %q", n)
	}
	if out, err := gatewayctl("--token", secret, "whoami"); err == nil || !strings.Contains(out, "revoked") {
		t.Fatalf("gatewayctl with the revoked token: %v\n%s", err, out)
	}
}
