package admit

import (
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/snapshot"
)

// budgeter is a Balances that enforces spend budgets (snapshot.Budget); dataplane/meter
// is.
type budgeter interface {
	// OverBudget returns why the account's or the key's budget refuses new requests, or
	// nil.
	OverBudget(accountID string, account *snapshot.Budget, keyID string, key *snapshot.Budget) error
}

// overBudget is the 402 budget_exceeded for p when its account's or key's budget is used
// up, or nil.
func (s *Admitter) overBudget(p Principal) *apierror.Error {
	b, ok := s.cfg.Balances.(budgeter)
	if !ok || (p.Acct.Budget == nil && (p.Key == nil || p.Key.Budget == nil)) {
		return nil
	}
	var keyID string
	var key *snapshot.Budget
	if p.Key != nil {
		keyID, key = p.Key.ID, p.Key.Budget
	}
	err := b.OverBudget(p.Acct.ID, p.Acct.Budget, keyID, key)
	if err == nil {
		return nil
	}
	return apierror.New(402, apierror.TypeInsufficientQuota, apierror.CodeBudgetExceeded, err.Error())
}
