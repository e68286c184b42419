package snapshot

import (
	"fmt"
	"time"
)

// Budget periods: a UTC calendar day, an ISO week (Monday 00:00 UTC to the next Monday) or
// a UTC calendar month.
const (
	PeriodDay   = "day"
	PeriodWeek  = "week"
	PeriodMonth = "month"
)

// Budget caps what an account (Account.Budget) or one key (Key.Budget) may spend in a
// period. Nodes refuse new inference (402 budget_exceeded) once the spend of the current
// period, as the control plane last reported it plus the node's own unconfirmed spend,
// reaches LimitMicroSEK. Nodes of internal protocol 2 and older are sent snapshots
// without budgets.
type Budget struct {
	Period        string `json:"period"` // PeriodDay, PeriodWeek or PeriodMonth
	LimitMicroSEK int64  `json:"limit_micro_sek"`
}

// Spent is what an account (KeyID empty) or one of its keys spent in the period of its
// budget that starts at From, as of the ledger sequence of the balances it travels with
// (Content.BalanceSeq, usage.Reply.BalanceSeq, usage.BalanceUpdate.Seq). Only accounts and
// keys with a budget are listed.
type Spent struct {
	AccountID string    `json:"account"`
	KeyID     string    `json:"key,omitempty"`
	From      time.Time `json:"from"`
	MicroSEK  int64     `json:"micro_sek"`
}

// ValidPeriod reports whether p names a budget period.
func ValidPeriod(p string) bool { return p == PeriodDay || p == PeriodWeek || p == PeriodMonth }

// Validate checks a budget: a known period and a positive limit.
func (b *Budget) Validate() error {
	if !ValidPeriod(b.Period) {
		return fmt.Errorf("budget period %q: want day, week or month", b.Period)
	}
	if b.LimitMicroSEK <= 0 {
		return fmt.Errorf("budget limit %d micro-SEK: want a positive amount", b.LimitMicroSEK)
	}
	return nil
}

// PeriodStart returns the start (UTC) of the period of kind p that contains t; an unknown
// period counts as a month.
func PeriodStart(p string, t time.Time) time.Time {
	t = t.UTC()
	y, m, d := t.Date()
	switch p {
	case PeriodDay:
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	case PeriodWeek:
		back := (int(t.Weekday()) + 6) % 7 // days since Monday
		return time.Date(y, m, d-back, 0, 0, 0, 0, time.UTC)
	}
	return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
}

// PeriodEnd returns the end (UTC, exclusive) of the period of kind p that contains t: when
// its budget resets.
func PeriodEnd(p string, t time.Time) time.Time {
	s := PeriodStart(p, t)
	switch p {
	case PeriodDay:
		return s.AddDate(0, 0, 1)
	case PeriodWeek:
		return s.AddDate(0, 0, 7)
	}
	return s.AddDate(0, 1, 0)
}
