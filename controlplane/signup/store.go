package signup

import (
	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/controlplane/store"
)

// Statuses of a signup.
const (
	StatusPending  = store.SignupPending
	StatusApproved = store.SignupApproved
	StatusRejected = store.SignupRejected
)

// Sentinel errors of the review operations (controlplane/store's).
var (
	ErrNotFound         = store.ErrSignupNotFound
	ErrConflict         = store.ErrSignupConflict
	ErrInvalidResidency = store.ErrInvalidResidency
)

// Signup is a stored access request; its wire shape is the admin API's.
type Signup = adminapi.Signup

// Approval says what approving does besides setting the status.
type Approval = store.Approval

// form is what the store keeps of a submission.
func (s Submission) form() store.SignupForm {
	return store.SignupForm{Name: s.Name, Email: s.Email, Company: s.Company, Residency: s.Residency,
		Volume: s.Volume, UseCase: s.UseCase}
}
