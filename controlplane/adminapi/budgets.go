package adminapi

import "time"

// Budget is an account's or a key's spend budget with what it spent in the current
// period (GET /admin/v1/accounts/{id}/budgets).
type Budget struct {
	AccountID string `json:"account_id"`
	// KeyID is empty for the account's own budget.
	KeyID   string `json:"key_id,omitempty"`
	KeyName string `json:"key_name,omitempty"`
	// Period is day (UTC calendar day), week (ISO week from Monday 00:00 UTC) or month
	// (UTC calendar month).
	Period        string `json:"period"`
	LimitMicroSEK int64  `json:"limit_micro_sek"`
	LimitSEK      string `json:"limit_sek"`
	// SpentMicroSEK is what the records stored so far in the current period cost.
	SpentMicroSEK int64     `json:"spent_micro_sek"`
	SpentSEK      string    `json:"spent_sek"`
	PeriodStart   time.Time `json:"period_start"`
	// ResetsAt is when the current period ends and the spend starts again from zero.
	ResetsAt time.Time `json:"resets_at"`
}

// SetBudgetRequest is the body of PUT /admin/v1/accounts/{id}/budget and
// PUT /admin/v1/keys/{id}/budget.
type SetBudgetRequest struct {
	// Period is day, week or month; empty means month.
	Period string `json:"period,omitempty"`
	// LimitSEK is the cap, a positive decimal string such as "500.00".
	LimitSEK string `json:"limit_sek"`
}

// BudgetState answers a change of a budget: the account or key and its budget after the
// change (null once cleared).
type BudgetState struct {
	AccountID string  `json:"account_id"`
	KeyID     string  `json:"key_id,omitempty"`
	Budget    *Budget `json:"budget"`
}

// UsedPercent is the spend as a whole percentage of the limit (rounded down; over 100 once
// the budget is overspent).
func (b Budget) UsedPercent() int64 {
	if b.LimitMicroSEK <= 0 {
		return 0
	}
	return b.SpentMicroSEK * 100 / b.LimitMicroSEK
}
