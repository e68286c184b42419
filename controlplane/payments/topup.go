package payments

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/client"

	"github.com/sekgate/gateway/controlplane/httpjson"
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/internalapi"
)

// Top-up bounds in whole SEK, inclusive.
const (
	MinTopupSEK = 100
	MaxTopupSEK = 50000
)

// maxTopupBody bounds the top-up request body; the real body is a few dozen bytes.
const maxTopupBody = 8 << 10

// errRecordSession marks a session the provider created that could not be recorded.
var errRecordSession = errors.New("record checkout session")

// ErrInvalidAmount is returned by ParseTopupBody for every body that is not a JSON object
// with an integer amount_sek within [MinTopupSEK, MaxTopupSEK].
var ErrInvalidAmount = errors.New("amount_sek must be an integer number of SEK from 100 to 50000")

// ParseTopupBody reads {"amount_sek": n} and returns n. n must be a JSON number with an
// integer value (100 and 100.0 are accepted, 100.5, "100" and 1e2 are not) within the
// top-up bounds. Other members of the object are ignored.
func ParseTopupBody(body []byte) (int64, error) {
	var v struct {
		AmountSEK json.RawMessage `json:"amount_sek"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&v); err != nil {
		return 0, fmt.Errorf("%w: body is not a JSON object: %v", ErrInvalidAmount, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return 0, fmt.Errorf("%w: trailing data after the JSON object", ErrInvalidAmount)
	}
	raw := string(bytes.TrimSpace(v.AmountSEK))
	if raw == "" || raw == "null" {
		return 0, fmt.Errorf("%w: amount_sek is missing", ErrInvalidAmount)
	}
	whole, frac, hasDot := strings.Cut(raw, ".")
	if hasDot && strings.Trim(frac, "0") != "" {
		return 0, fmt.Errorf("%w: %s is not a whole number", ErrInvalidAmount, raw)
	}
	if whole == "" || len(whole) > 6 {
		return 0, fmt.Errorf("%w: got %.20s", ErrInvalidAmount, raw)
	}
	for i := 0; i < len(whole); i++ {
		if whole[i] < '0' || whole[i] > '9' {
			return 0, fmt.Errorf("%w: got %.20s", ErrInvalidAmount, raw)
		}
	}
	n, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || n < MinTopupSEK || n > MaxTopupSEK {
		return 0, fmt.Errorf("%w: got %s", ErrInvalidAmount, whole)
	}
	return n, nil
}

// TopupConfig configures the top-up handler.
type TopupConfig struct {
	// SecretKey is the payment provider's secret API key (a test-mode key during the
	// evaluation). Required; sk_live_/rk_live_ or sk_test_/rk_test_ (its mode is checked
	// against every session the provider returns).
	SecretKey string
	// Sessions records every checkout session created, before its URL is handed out; the
	// webhook credits only recorded sessions. Required (*store.Store).
	Sessions Sessions
	// APIBase is the provider API's base URL without /v1 (for tests, a stripe-mock
	// address). Empty means the provider's public API.
	APIBase string
	// SuccessURL and CancelURL are where the hosted checkout sends the customer after
	// paying or giving up. Required, absolute http(s) URLs. The provider replaces the
	// literal {CHECKOUT_SESSION_ID} in them.
	SuccessURL string
	CancelURL  string
	// ProductName is the line item's name on the checkout page. Default "Gateway credit".
	ProductName string
	// HTTPClient talks to the provider. Default: a client with a 20 s timeout.
	HTTPClient *http.Client
	// MaxNetworkRetries is how often the provider client retries a failed call (with the
	// same idempotency key). Default 2; negative means 0.
	MaxNetworkRetries int64
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// OnSession, when set, is told each checkout session attempt's result (created, or
	// failed at the provider or when recording it); the ops metrics count them.
	OnSession func(created bool)
}

// Topup serves POST /v1/service/topup.
type Topup struct {
	api    *client.API
	live   bool
	cfg    TopupConfig
	logger *slog.Logger
}

// NewTopup validates cfg, fills defaults and builds the handler with its own provider
// client (no package-global key).
func NewTopup(cfg TopupConfig) (*Topup, error) {
	if cfg.SecretKey == "" {
		return nil, errors.New("payments: TopupConfig.SecretKey is required")
	}
	live, err := KeyLivemode(cfg.SecretKey)
	if err != nil {
		return nil, fmt.Errorf("payments: TopupConfig.SecretKey: %w", err)
	}
	if cfg.Sessions == nil {
		return nil, errors.New("payments: TopupConfig.Sessions is required")
	}
	for name, u := range map[string]string{"SuccessURL": cfg.SuccessURL, "CancelURL": cfg.CancelURL} {
		if err := httpjson.CheckAbsURL(u); err != nil {
			return nil, fmt.Errorf("payments: TopupConfig.%s: %w", name, err)
		}
	}
	if cfg.APIBase != "" {
		if err := httpjson.CheckAbsURL(cfg.APIBase); err != nil {
			return nil, fmt.Errorf("payments: TopupConfig.APIBase: %w", err)
		}
		cfg.APIBase = strings.TrimSuffix(strings.TrimSuffix(cfg.APIBase, "/"), "/v1")
	}
	if cfg.ProductName == "" {
		cfg.ProductName = "Gateway credit"
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 20 * time.Second}
	}
	if cfg.MaxNetworkRetries == 0 {
		cfg.MaxNetworkRetries = 2
	} else if cfg.MaxNetworkRetries < 0 {
		cfg.MaxNetworkRetries = 0
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	bc := &stripe.BackendConfig{
		HTTPClient:        cfg.HTTPClient,
		MaxNetworkRetries: stripe.Int64(cfg.MaxNetworkRetries),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	}
	if cfg.APIBase != "" {
		bc.URL = stripe.String(cfg.APIBase)
	}
	return &Topup{
		api:    client.New(cfg.SecretKey, stripe.NewBackendsWithConfig(bc)),
		live:   live,
		cfg:    cfg,
		logger: cfg.Logger,
	}, nil
}

// ServeHTTP creates the checkout session. The caller (the control plane's server) must
// have checked the node token: the account header is trusted as is.
func (t *Topup) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		methodNotAllowed(w, r)
		return
	}
	account := r.Header.Get(internalapi.HeaderAccountID)
	if account == "" {
		httpjson.WriteError(w, httpjson.ErrNoAccount)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxTopupBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			httpjson.WriteError(w, httpjson.ErrTopupTooLarge)
			return
		}
		httpjson.WriteError(w, httpjson.ErrTopupUnreadable)
		return
	}
	amount, err := ParseTopupBody(body)
	if err != nil {
		httpjson.WriteError(w, apierror.InvalidParam("amount_sek", err.Error()))
		return
	}
	requestID := r.Header.Get(internalapi.HeaderRequestID)
	url, err := t.createSession(r, account, amount, requestID)
	if t.cfg.OnSession != nil {
		t.cfg.OnSession(err == nil)
	}
	if err != nil {
		t.logger.ErrorContext(r.Context(), "create checkout session",
			"account_id", account, "amount_sek", amount, "request_id", requestID, "err", err)
		if errors.Is(err, errRecordSession) { // the URL is withheld: an unrecorded session could never be credited
			httpjson.WriteError(w, httpjson.ErrSessionNotRecorded)
			return
		}
		httpjson.WriteError(w, httpjson.ErrPaymentProvider)
		return
	}
	t.logger.InfoContext(r.Context(), "checkout session created",
		"account_id", account, "amount_sek", amount, "request_id", requestID)
	httpjson.WriteJSON(w, http.StatusOK, map[string]string{"url": url})
}

func (t *Topup) createSession(r *http.Request, account string, amountSEK int64, requestID string) (string, error) {
	amountStr := strconv.FormatInt(amountSEK, 10)
	params := &stripe.CheckoutSessionParams{
		Mode:              stripe.String(string(stripe.CheckoutSessionModePayment)),
		Currency:          stripe.String(string(stripe.CurrencySEK)),
		ClientReferenceID: stripe.String(account),
		SuccessURL:        stripe.String(t.cfg.SuccessURL),
		CancelURL:         stripe.String(t.cfg.CancelURL),
		LineItems: []*stripe.CheckoutSessionLineItemParams{{
			Quantity: stripe.Int64(1),
			PriceData: &stripe.CheckoutSessionLineItemPriceDataParams{
				Currency:   stripe.String(string(stripe.CurrencySEK)),
				UnitAmount: stripe.Int64(amountSEK * 100), // öre
				ProductData: &stripe.CheckoutSessionLineItemPriceDataProductDataParams{
					Name: stripe.String(t.cfg.ProductName),
				},
			},
		}},
		Metadata: map[string]string{"account_id": account, "amount_sek": amountStr},
	}
	params.Context = r.Context()
	if requestID != "" {
		params.SetIdempotencyKey("topup-" + requestID)
	}
	s, err := t.api.CheckoutSessions.New(params)
	if err != nil {
		return "", fmt.Errorf("checkout session for %s (%s SEK): %w", account, amountStr, err)
	}
	if s.URL == "" || s.ID == "" {
		return "", fmt.Errorf("checkout session %q for %s has no ID or URL", s.ID, account)
	}
	if s.Livemode != t.live {
		return "", fmt.Errorf("checkout session %s for %s: livemode %v, but the secret key's mode is %v", s.ID, account, s.Livemode, t.live)
	}
	sess := Session{ID: s.ID, AccountID: account, AmountOre: amountSEK * 100, Currency: string(stripe.CurrencySEK),
		Livemode: s.Livemode, RequestID: requestID}
	if s.Created > 0 {
		sess.Created = time.Unix(s.Created, 0).UTC()
	}
	// Recorded before the URL is handed out, so every session a customer can pay is known.
	if err := t.cfg.Sessions.RecordCheckoutSession(r.Context(), sess); err != nil {
		return "", fmt.Errorf("%w: %v", errRecordSession, err)
	}
	return s.URL, nil
}
