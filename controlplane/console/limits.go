package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/snapshot"
)

// limitsForm reads a limits form (requests_per_second, burst, max_concurrent, and for an
// account hold_max_price) into the "limits" value of an admin API PATCH: an object, or null
// when the form's clear button was pressed. Empty fields are 0 (not limited).
func limitsForm(f url.Values) (json.RawMessage, error) {
	if f.Get("clear") != "" {
		return json.RawMessage("null"), nil
	}
	var l snapshot.Limits
	if v := strings.TrimSpace(f.Get("requests_per_second")); v != "" {
		n, err := strconv.ParseFloat(strings.Replace(v, ",", ".", 1), 64)
		if err != nil || n < 0 || n != n || n > 1e9 {
			return nil, errors.New("Requests per second must be a number, 0 or more (0: no rate limit).")
		}
		l.RequestsPerSecond = n
	}
	for _, field := range []struct {
		name, label string
		to          *int
	}{{"burst", "Burst", &l.Burst}, {"max_concurrent", "Concurrency", &l.MaxConcurrent}} {
		v := strings.TrimSpace(f.Get(field.name))
		if v == "" {
			continue
		}
		n, ok := atoi(v)
		if !ok || n < 0 {
			return nil, fmt.Errorf("%s must be a whole number, 0 or more (0: no limit).", field.label)
		}
		*field.to = n
	}
	l.HoldMaxPrice = f.Get("hold_max_price") != ""
	return json.Marshal(l)
}

// limitsNotice says what a limits form did.
func limitsNotice(what string, raw json.RawMessage) string {
	if string(raw) == "null" {
		return "Limits of " + what + " cleared."
	}
	var l snapshot.Limits
	_ = json.Unmarshal(raw, &l)
	return "Limits of " + what + " set: " + adminapi.LimitsText(l) + "."
}

// accountLimits handles the account page's limits form.
func (c *Console) accountLimits(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	back := "/console/accounts/" + url.PathEscape(id)
	_ = r.ParseForm()
	raw, err := limitsForm(r.PostForm)
	if err != nil {
		c.failed(w, r, back, err.Error())
		return
	}
	st, msg := c.api(r, s, http.MethodPatch, "/admin/v1/accounts/"+url.PathEscape(id), adminapi.PatchAccountRequest{Limits: raw}, nil)
	if st != http.StatusOK {
		c.failed(w, r, back, msg)
		return
	}
	c.done(w, r, back, limitsNotice("the account", raw))
}

// keyLimits handles a key row's limits form.
func (c *Console) keyLimits(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	_ = r.ParseForm()
	back := "/console/accounts/" + url.PathEscape(r.PostForm.Get("account"))
	raw, err := limitsForm(r.PostForm)
	if err != nil {
		c.failed(w, r, back, err.Error())
		return
	}
	var k adminapi.Key
	st, msg := c.api(r, s, http.MethodPatch, "/admin/v1/keys/"+url.PathEscape(id), map[string]json.RawMessage{"limits": raw}, &k)
	if st != http.StatusOK {
		c.failed(w, r, back, msg)
		return
	}
	c.done(w, r, "/console/accounts/"+url.PathEscape(k.AccountID), limitsNotice("key "+k.ID, raw))
}
