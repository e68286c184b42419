package console

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

// A form whose answer must be shown once (a new key's secret, a test-box answer) still
// ends with a redirect, so that reloading the page repeats nothing: the answer waits here,
// server-side, under a random ID in a short-lived cookie, for the page the redirect loads.
// It is given only to the session that made it, once, within onceTTL.

const (
	onceCookie = "console_once"
	onceTTL    = 2 * time.Minute
	onceMax    = 1000 // answers waiting at most; the oldest go first
)

type onceAnswer struct {
	session string // the session token that may read it
	opToken *adminapi.CreatedToken
	expires time.Time
	key     *adminapi.Key
	testBox *adminapi.TestBoxResult
	// alertRule is a new alert rule with its signing secret.
	alertRule *adminapi.AlertRule
	notice    string
}

type onceStore struct {
	mu sync.Mutex
	m  map[string]onceAnswer
}

func (o *onceStore) put(now time.Time, a onceAnswer) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[string]onceAnswer{}
	}
	for k, v := range o.m {
		if now.After(v.expires) || len(o.m) >= onceMax {
			delete(o.m, k)
		}
	}
	a.expires = now.Add(onceTTL)
	o.m[id] = a
	return id
}

func (o *onceStore) take(now time.Time, id, session string) (onceAnswer, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	a, ok := o.m[id]
	if !ok || a.session != session || now.After(a.expires) {
		return onceAnswer{}, false
	}
	delete(o.m, id)
	return a, true
}

// redirectOnce keeps a for the next page of session s and redirects there.
func (c *Console) redirectOnce(w http.ResponseWriter, r *http.Request, s *session, to string, a onceAnswer) {
	a.session = s.token
	c.setCookie(w, onceCookie, c.once.put(c.now(), a), onceTTL)
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// takeOnce returns the answer a redirect left for this page, if any, and forgets it.
func (c *Console) takeOnce(w http.ResponseWriter, r *http.Request, s *session) (onceAnswer, bool) {
	ck, err := r.Cookie(onceCookie)
	if err != nil {
		return onceAnswer{}, false
	}
	c.clearCookie(w, onceCookie)
	return c.once.take(c.now(), ck.Value, s.token)
}
