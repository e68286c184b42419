package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/controlplane/adminclient"
	"github.com/sekgate/gateway/deploy/tools/proc"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Admin is a client of the control plane's admin API.
type Admin struct {
	// URL is the admin listener's http://host:port.
	URL string
	// Token is the admin token.
	Token string
	// Client sends the requests (default http.DefaultClient).
	Client *http.Client
}

// Reply is a fully read answer.
type Reply struct {
	Status int
	Header http.Header
	Body   []byte
}

func (a Admin) client() *http.Client {
	if a.Client == nil {
		return http.DefaultClient
	}
	return a.Client
}

// Do sends in (JSON; no body when nil) to method path and returns the answer, whatever
// its status.
func (a Admin) Do(ctx context.Context, method, path string, in any) (Reply, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return Reply{}, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.URL+path, body)
	if err != nil {
		return Reply{}, err
	}
	req.Header.Set("Authorization", "Bearer "+a.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client().Do(req)
	if err != nil {
		return Reply{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return Reply{}, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	return Reply{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// Call sends in to method path, fails unless the status is 2xx, and decodes the answer
// into out (when not nil). It is controlplane/adminclient's call: one client of the
// admin API for gatewayctl and the harnesses.
func (a Admin) Call(ctx context.Context, method, path string, in, out any) error {
	c, err := a.typed()
	if err != nil {
		return err
	}
	raw, err := c.Do(ctx, method, path, in)
	if e := (*adminclient.Error)(nil); errors.As(err, &e) {
		return fmt.Errorf("%s %s: %w", method, path, err) // an answer's error does not name the call
	}
	if err != nil {
		return err
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%s %s: decode %s: %w", method, path, raw, err)
		}
	}
	return nil
}

// typed returns the admin API client of cmd/gatewayctl.
func (a Admin) typed() (*adminclient.Client, error) {
	return adminclient.New(adminclient.Config{BaseURL: a.URL, Token: a.Token, HTTP: a.client()})
}

// WaitControlPlane waits up to timeout until cp's node listener answers /healthz and its
// admin API serves a compiled snapshot, failing at once when cp exits.
func WaitControlPlane(ctx context.Context, client *http.Client, cp *proc.Proc, admin Admin, timeout time.Duration) error {
	if err := proc.WaitHTTP(ctx, client, cp, "GET", "/healthz", "", 200, timeout); err != nil {
		return err
	}
	err := proc.WaitURL(ctx, client, "GET", admin.URL+"/admin/v1/snapshot", "Bearer "+admin.Token, 200, timeout, func() error {
		if cp.Exited() {
			return fmt.Errorf("%s exited (%v); see %s", cp.Name, cp.Err(), cp.LogPath())
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("control plane admin API: %w", err)
	}
	return nil
}

// LoadCatalog replaces the catalogue.
func (a Admin) LoadCatalog(ctx context.Context, catalog any) error {
	if err := a.Call(ctx, http.MethodPut, "/admin/v1/catalog", catalog, nil); err != nil {
		return fmt.Errorf("load catalogue: %w", err)
	}
	return nil
}

// AccountSpec says what account NewAccount creates.
type AccountSpec struct {
	Customer  string
	Residency string
	// CreditSEK is the credit given, an exact decimal string ("100000.00").
	CreditSEK string
	// CreditNote is the credit's note.
	CreditNote string
	// Models are enabled for the account.
	Models []string
	// KeyName names its API key.
	KeyName string
	// Limits, when set, are the account's own limits (without them the node's defaults
	// apply, e.g. 256 requests in flight): a load generator needs more.
	Limits *snapshot.Limits
}

// Account is an account with its API key.
type Account struct {
	ID, Key string
}

// NewAccount creates an account, credits it, enables its models and creates its key.
func (a Admin) NewAccount(ctx context.Context, sp AccountSpec) (Account, error) {
	c, err := a.typed()
	if err != nil {
		return Account{}, err
	}
	acct, _, err := c.CreateAccount(ctx, adminapi.CreateAccountRequest{Customer: sp.Customer, Residency: sp.Residency})
	if err != nil {
		return Account{}, fmt.Errorf("create account: %w", err)
	}
	if _, _, err := c.Credit(ctx, acct.ID, adminapi.CreditRequest{AmountSEK: sp.CreditSEK, Note: sp.CreditNote}); err != nil {
		return Account{}, fmt.Errorf("credit %s: %w", acct.ID, err)
	}
	if sp.Limits != nil {
		lim, err := json.Marshal(sp.Limits)
		if err != nil {
			return Account{}, err
		}
		if _, _, err := c.PatchAccount(ctx, acct.ID, adminapi.PatchAccountRequest{Limits: lim}); err != nil {
			return Account{}, fmt.Errorf("limits of %s: %w", acct.ID, err)
		}
	}
	// Harnesses also test the data plane's own residency refusal.
	if _, err := c.EnableModels(ctx, acct.ID, sp.Models, true); err != nil {
		return Account{}, fmt.Errorf("enable models of %s: %w", acct.ID, err)
	}
	key, _, err := c.CreateKey(ctx, acct.ID, adminapi.CreateKeyRequest{Name: sp.KeyName})
	if err != nil {
		return Account{}, fmt.Errorf("create key of %s: %w", acct.ID, err)
	}
	if key.Secret == "" {
		return Account{}, errors.New("create key: no secret in the answer")
	}
	return Account{ID: acct.ID, Key: key.Secret}, nil
}
