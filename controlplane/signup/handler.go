package signup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/sekgate/gateway/controlplane/httpjson"
	"github.com/sekgate/gateway/controlplane/store"
	"github.com/sekgate/gateway/shared/clientaddr"
)

// Store keeps submissions for review. *PGStore implements it.
type Store interface {
	// CreateSignup stores a pending request. A pending request for the same email
	// (case-insensitive) makes it a no-op without error.
	CreateSignup(ctx context.Context, f store.SignupForm, clientAddr string) error
}

// Config configures the form handler.
type Config struct {
	// Store keeps the submissions. Required.
	Store Store
	// ConfirmURL is the public site's confirmation page. Required, absolute http(s) URL.
	ConfirmURL string
	// ErrorURL is the public site's error page; the handler adds ?error=<code>. Required,
	// absolute http(s) URL (it may carry its own query).
	ErrorURL string
	// Rate and Burst limit submissions per client address. Defaults: 5 per minute, burst 5.
	Rate  rate.Limit
	Burst int
	// MaxClients bounds the number of addresses tracked by the rate limiter (default
	// 10000); the least recently seen is forgotten first.
	MaxClients int
	// Logger defaults to slog.Default(); Now to time.Now.
	Logger *slog.Logger
	Now    func() time.Time
	// OnSubmission, when set, is told each submission's outcome: received, rate_limited,
	// invalid, honeypot or error; the ops metrics count them.
	OnSubmission func(outcome string)
}

// Handler serves POST /v1/service/signup.
type Handler struct {
	cfg     Config
	errBase *url.URL
	lim     *limiter
}

// NewHandler validates cfg and fills defaults.
func NewHandler(cfg Config) (*Handler, error) {
	if cfg.Store == nil {
		return nil, errors.New("signup: Config.Store is required")
	}
	if err := httpjson.CheckAbsURL(cfg.ConfirmURL); err != nil {
		return nil, fmt.Errorf("signup: Config.ConfirmURL: %w", err)
	}
	if err := httpjson.CheckAbsURL(cfg.ErrorURL); err != nil {
		return nil, fmt.Errorf("signup: Config.ErrorURL: %w", err)
	}
	errBase, _ := url.Parse(cfg.ErrorURL)
	if cfg.Rate <= 0 {
		cfg.Rate = rate.Every(time.Minute / 5)
	}
	if cfg.Burst <= 0 {
		cfg.Burst = 5
	}
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = 10000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Handler{cfg: cfg, errBase: errBase, lim: newLimiter(cfg.Rate, cfg.Burst, cfg.MaxClients)}, nil
}

// errorURL is the error page with error=code added to its query.
func (h *Handler) errorURL(code string) string {
	u := *h.errBase
	q := u.Query()
	q.Set("error", code)
	u.RawQuery = q.Encode()
	return u.String()
}

// ServeHTTP handles one submission. The caller (the control plane's server) must have
// checked the node token, so X-Forwarded-For comes from a data-plane node.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		httpjson.WriteError(w, httpjson.ErrMethodNotAllowed)
		return
	}
	ctx := r.Context()
	addr := ClientAddr(r)
	if ok, wait := h.lim.allow(RateKey(addr), h.cfg.Now()); !ok {
		secs := int(math.Ceil(wait.Seconds()))
		if secs < 1 {
			secs = 1
		}
		h.note("rate_limited")
		httpjson.WriteError(w, httpjson.ErrSignupRateLimited.WithRetryAfter(secs))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		code := CodeInvalidForm
		if errors.As(err, &mbe) {
			code = CodeTooLarge
		}
		h.note("invalid")
		h.redirect(w, r, h.errorURL(code))
		return
	}
	sub, err := ParseForm(r.Header.Get("Content-Type"), body)
	if err != nil {
		code := CodeInvalidForm
		var fe *FormError
		if errors.As(err, &fe) {
			code = fe.Code
		}
		h.note("invalid")
		h.redirect(w, r, h.errorURL(code))
		return
	}
	if sub.Honeypot {
		h.cfg.Logger.InfoContext(ctx, "signup honeypot filled; dropped", "client_addr", addr)
		h.note("honeypot")
		h.redirect(w, r, h.cfg.ConfirmURL)
		return
	}
	if err := h.cfg.Store.CreateSignup(ctx, sub.form(), addr); err != nil {
		h.cfg.Logger.ErrorContext(ctx, "store signup", "client_addr", addr, "err", err)
		h.note("error")
		h.redirect(w, r, h.errorURL(CodeUnavailable))
		return
	}
	h.cfg.Logger.InfoContext(ctx, "signup received", "client_addr", addr)
	h.note("received")
	h.redirect(w, r, h.cfg.ConfirmURL)
}

func (h *Handler) note(outcome string) {
	if h.cfg.OnSubmission != nil {
		h.cfg.OnSubmission(outcome)
	}
}

func (h *Handler) redirect(w http.ResponseWriter, r *http.Request, to string) {
	w.Header().Set("Location", to)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusSeeOther)
}

// ClientAddr is the client address of a forwarded request: the last X-Forwarded-For
// entry (the one the data plane appended), else the host of the connection's address.
func ClientAddr(r *http.Request) string {
	if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
		last := xff[len(xff)-1]
		if i := strings.LastIndexByte(last, ','); i >= 0 {
			last = last[i+1:]
		}
		if last = strings.TrimSpace(last); last != "" {
			if len(last) > 100 {
				last = last[:100]
			}
			return last
		}
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// RateKey is the rate limiter's bucket for a client address: its clientaddr.Prefix,
// written as the address for IPv4 and as the /64 for IPv6. A port or zone is dropped; a
// string that is no address is its own bucket.
func RateKey(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		ap, perr := netip.ParseAddrPort(addr)
		if perr != nil {
			return addr
		}
		ip = ap.Addr()
	}
	p := clientaddr.Prefix(ip)
	if p.Addr().Is4() {
		return p.Addr().String()
	}
	return p.String()
}
