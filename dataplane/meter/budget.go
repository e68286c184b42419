package meter

import (
	"fmt"
	"strings"
	"time"

	"github.com/sekgate/gateway/shared/money"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Budgets (snapshot.Budget) cap what an account, or one key, spends per period. The node
// knows each capped account's and key's spend in the current period as of a ledger
// sequence (snapshot.Spent, from the snapshot, usage replies and the balance watch, with
// the balances) and subtracts its own unconfirmed spend exactly as for the balance:
//
//	left = limit − known spend of the period − unconfirmed spend − confirmed spend the known spend may not include yet
//
// A request is admitted while left > 0 for the account's budget and the key's. The
// overshoot bound is the balance's (doc.go): on one node a budget ends at most C × Pmax
// above its limit, across nodes Σ C_i × Pmax plus what the other nodes spend while a
// batch travels to the control plane and back. Spend known for a period that has ended
// counts as 0; unconfirmed spend always counts, so just after a reset spend of the old
// period may hold back the new one until it is confirmed (at most one batch round trip).
// A key's confirmed spend is held back only once the node knows a spend of the key's (its
// budget came with the snapshot): before that nothing enforces it, and the first spend
// known covers everything confirmed up to its sequence.

// isKey reports whether a balances entry is a key's (key_<hex>) rather than an account's.
func isKey(id string) bool { return strings.HasPrefix(id, "key_") }

// applySpent takes budget spend as of seq; an entry keeps spend it has as of a newer seq.
func (b *balances) applySpent(spent []snapshot.Spent, seq int64) {
	for _, x := range spent {
		id := x.AccountID
		if x.KeyID != "" {
			id = x.KeyID
		}
		sh := b.shard(id)
		sh.mu.Lock()
		a := sh.get(id)
		if !a.spentKnown || seq > a.spentSeq || (seq == a.spentSeq && x.From.Unix() > a.spentFrom) {
			a.spentKnown, a.spent, a.spentFrom, a.spentSeq = true, x.MicroSEK, x.From.Unix(), seq
		}
		if x.KeyID != "" && a.awaitAmt != 0 && a.spentSeq >= a.awaitSeq {
			a.awaitAmt, a.awaitSeq = 0, 0
		}
		sh.mu.Unlock()
	}
}

// budgetLeft returns what is left of budget bg of entry id (an account or key) at now.
func (b *balances) budgetLeft(id string, bg *snapshot.Budget, now time.Time) int64 {
	from := snapshot.PeriodStart(bg.Period, now).Unix()
	sh := b.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	a := sh.accts[id]
	if a == nil {
		return bg.LimitMicroSEK
	}
	used := a.unconfirmed + a.awaitAmt
	if a.spentKnown && a.spentFrom >= from {
		used += a.spent
	}
	return bg.LimitMicroSEK - used
}

// BudgetExceeded says which budget refused a request and when it resets.
type BudgetExceeded struct {
	KeyID   string // empty: the account's budget
	Budget  snapshot.Budget
	ResetAt time.Time
}

// Error is the refusal's message for the client.
func (e *BudgetExceeded) Error() string {
	whose := "the account's"
	if e.KeyID != "" {
		whose = "this API key's (" + e.KeyID + ")"
	}
	return fmt.Sprintf("%s budget of %s SEK per %s is used up; it resets at %s",
		whose, money.FormatSEK(e.Budget.LimitMicroSEK), e.Budget.Period, e.ResetAt.UTC().Format(time.RFC3339))
}

// OverBudget reports (as a *BudgetExceeded) the first budget, the account's then the
// key's (either nil for none), that the spend the node knows of has reached; nil when the
// request may go on.
func (m *Meter) OverBudget(accountID string, account *snapshot.Budget, keyID string, key *snapshot.Budget) error {
	if account == nil && key == nil {
		return nil
	}
	now := m.cfg.Now()
	if account != nil && m.bal.budgetLeft(accountID, account, now) <= 0 {
		return &BudgetExceeded{Budget: *account, ResetAt: snapshot.PeriodEnd(account.Period, now)}
	}
	if key != nil && keyID != "" && m.bal.budgetLeft(keyID, key, now) <= 0 {
		return &BudgetExceeded{KeyID: keyID, Budget: *key, ResetAt: snapshot.PeriodEnd(key.Period, now)}
	}
	return nil
}

// SeedSpent takes the budget spend of a snapshot, as of its balance sequence seq.
func (m *Meter) SeedSpent(spent []snapshot.Spent, seq int64) {
	m.bal.applySpent(spent, seq)
}
