package signup

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/controlplane/httpjson"
	"github.com/sekgate/gateway/shared/apierror"
)

// Reviewer is what the admin endpoints need. *PGStore implements it.
type Reviewer interface {
	ListSignups(ctx context.Context, status string, limit int) ([]Signup, error)
	ApproveSignup(ctx context.Context, id string, a Approval) (Signup, error)
	RejectSignup(ctx context.Context, id string) (Signup, error)
}

// Admin serves the operator's review endpoints. They must run behind the admin-token
// check; Routes returns them keyed by net/http mux pattern.
type Admin struct {
	rev Reviewer
	log *slog.Logger
}

// NewAdmin returns the admin endpoints on rev; logger defaults to slog.Default().
func NewAdmin(rev Reviewer, logger *slog.Logger) (*Admin, error) {
	if rev == nil {
		return nil, errors.New("signup: NewAdmin needs a Reviewer")
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Admin{rev: rev, log: logger}, nil
}

// Routes maps mux patterns to handlers:
//
//	GET  /admin/v1/signups?status=pending|approved|rejected&limit=1..1000 -> {"data": [Signup]}
//	POST /admin/v1/signups/{id}/approve {"create_account": bool, "residency": "se"} -> Signup
//	POST /admin/v1/signups/{id}/reject -> Signup
func (a *Admin) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"GET /admin/v1/signups":               http.HandlerFunc(a.list),
		"POST /admin/v1/signups/{id}/approve": http.HandlerFunc(a.approve),
		"POST /admin/v1/signups/{id}/reject":  http.HandlerFunc(a.reject),
	}
}

// Register adds Routes to mux as they are (without any authentication of its own).
func (a *Admin) Register(mux *http.ServeMux) {
	for p, h := range a.Routes() {
		mux.Handle(p, h)
	}
}

func (a *Admin) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	status := q.Get("status")
	switch status {
	case "", StatusPending, StatusApproved, StatusRejected:
	default:
		httpjson.WriteError(w, httpjson.ErrSignupStatus)
		return
	}
	limit := 100
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			httpjson.WriteError(w, httpjson.ErrSignupLimit)
			return
		}
		limit = n
	}
	list, err := a.rev.ListSignups(r.Context(), status, limit)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, map[string]any{"data": list})
}

func (a *Admin) approve(w http.ResponseWriter, r *http.Request) {
	var body adminapi.ApproveSignupRequest
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 16<<10))
	if err != nil {
		httpjson.WriteError(w, httpjson.ErrBodyUnreadable)
		return
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &body); err != nil {
			httpjson.WriteError(w, apierror.New(http.StatusBadRequest, apierror.TypeInvalidRequest, "",
				"body must be {\"create_account\": bool, \"residency\": \"se\"|\"eu\"|\"any\"}: "+err.Error()))
			return
		}
	}
	s, err := a.rev.ApproveSignup(r.Context(), r.PathValue("id"), Approval{CreateAccount: body.CreateAccount, Residency: body.Residency})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.log.InfoContext(r.Context(), "signup approved", "signup_id", s.ID, "account_id", s.AccountID)
	httpjson.WriteJSON(w, http.StatusOK, s)
}

func (a *Admin) reject(w http.ResponseWriter, r *http.Request) {
	s, err := a.rev.RejectSignup(r.Context(), r.PathValue("id"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.log.InfoContext(r.Context(), "signup rejected", "signup_id", s.ID)
	httpjson.WriteJSON(w, http.StatusOK, s)
}

func (a *Admin) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, ErrNotFound):
		httpjson.WriteError(w, httpjson.ErrSignupNotFound)
	case errors.Is(err, ErrConflict):
		httpjson.WriteError(w, apierror.New(http.StatusConflict, apierror.TypeInvalidRequest, apierror.CodeConflict, err.Error()))
	case errors.Is(err, ErrInvalidResidency):
		httpjson.WriteError(w, httpjson.ErrSignupResidency)
	default:
		a.log.ErrorContext(r.Context(), "signup review", "err", err)
		httpjson.WriteError(w, httpjson.ErrInternal)
	}
}
