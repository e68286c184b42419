package meter

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/sekgate/gateway/shared/snapshot"
)

const balanceShards = 64

// balances is the node's view of account balances, sharded by account to keep Record and
// Spendable from contending on one lock. Keys have entries of their own (key IDs and
// account IDs never collide): their unconfirmed spend and, for keys with a budget, their
// spend in the budget's period; their balance stays unused.
type balances struct {
	seed   maphash.Seed
	shards [balanceShards]balanceShard
	cursor atomic.Int64 // balance-watch position: newest complete ledger sequence seen
}

type balanceShard struct {
	mu    sync.Mutex
	accts map[string]*acct
}

type acct struct {
	known       bool  // balance came from the control plane
	balance     int64 // micro-SEK as of seq
	seq         int64
	unconfirmed int64 // spend handed over, not yet confirmed
	// awaitAmt is confirmed spend the known balance may not include yet; it is released
	// once a balance with seq >= awaitSeq arrives.
	awaitAmt int64
	awaitSeq int64
	// spent is the spend of the current budget period that started at spentFrom (unix
	// seconds) as of spentSeq (budget.go); spentKnown once the control plane sent one.
	spent, spentFrom, spentSeq int64
	spentKnown                 bool
}

func newBalances() *balances {
	b := &balances{seed: maphash.MakeSeed()}
	for i := range b.shards {
		b.shards[i].accts = make(map[string]*acct)
	}
	return b
}

func (b *balances) shard(id string) *balanceShard {
	return &b.shards[maphash.String(b.seed, id)%balanceShards]
}

// get returns the account's entry; the caller holds sh.mu.
func (sh *balanceShard) get(id string) *acct {
	a := sh.accts[id]
	if a == nil {
		a = &acct{}
		sh.accts[id] = a
	}
	return a
}

func (b *balances) spendable(id string) int64 {
	sh := b.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	a := sh.accts[id]
	if a == nil {
		return 0
	}
	return a.balance - a.unconfirmed - a.awaitAmt
}

// hold takes amt from the account's spendable balance when it covers amt, as spend not yet
// confirmed; release gives it back.
func (b *balances) hold(id string, amt int64) bool {
	sh := b.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	a := sh.accts[id]
	if a == nil || a.balance-a.unconfirmed-a.awaitAmt < amt {
		return false
	}
	a.unconfirmed += amt
	return true
}

func (b *balances) addUnconfirmed(id string, amt int64) {
	sh := b.shard(id)
	sh.mu.Lock()
	sh.get(id).unconfirmed += amt
	sh.mu.Unlock()
}

// applyLocked takes a balance as of seq unless the account already has one as new.
func (a *acct) applyLocked(micro, seq int64) {
	if !a.known || seq > a.seq {
		a.known, a.balance, a.seq = true, micro, seq
	}
	if a.awaitAmt != 0 && a.seq >= a.awaitSeq {
		a.awaitAmt, a.awaitSeq = 0, 0
	}
}

// apply takes balances and budget spend as of seq. With complete set (a snapshot or a
// balance-watch answer, which cover every change up to seq) the watch cursor moves to seq.
func (b *balances) apply(bals []snapshot.Balance, spent []snapshot.Spent, seq int64, complete bool) {
	for _, x := range bals {
		sh := b.shard(x.AccountID)
		sh.mu.Lock()
		sh.get(x.AccountID).applyLocked(x.MicroSEK, seq)
		sh.mu.Unlock()
	}
	b.applySpent(spent, seq)
	if complete {
		for {
			cur := b.cursor.Load()
			if seq <= cur || b.cursor.CompareAndSwap(cur, seq) {
				break
			}
		}
	}
}

// confirm releases the spend of a confirmed batch after applying the reply's balances.
// Spend of an account whose known balance may predate the batch's commit (seq) stays
// subtracted until a balance as of seq or newer arrives.
func (b *balances) confirm(spend map[string]int64, bals []snapshot.Balance, spent []snapshot.Spent, seq int64) {
	b.apply(bals, spent, seq, false)
	for id, amt := range spend {
		sh := b.shard(id)
		sh.mu.Lock()
		a := sh.get(id)
		a.unconfirmed -= amt
		need := seq
		if need <= 0 { // the reply did not say which ledger position it reflects
			need = a.seq + 1
		}
		known, at := a.known, a.seq
		if isKey(id) { // a key's spend is known from its budget spend alone
			if !a.spentKnown { // no budget known: nothing to hold (budget.go)
				sh.mu.Unlock()
				continue
			}
			known, at = a.spentKnown, a.spentSeq
		}
		if !known || at < need {
			a.awaitAmt += amt
			a.awaitSeq = max(a.awaitSeq, need)
		}
		sh.mu.Unlock()
	}
}

// view is one account's state, for tests and debugging.
type view struct {
	Known                 bool
	Balance, Seq          int64
	Unconfirmed, AwaitAmt int64
}

func (b *balances) view(id string) view {
	sh := b.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	a := sh.accts[id]
	if a == nil {
		return view{}
	}
	return view{a.known, a.balance, a.seq, a.unconfirmed, a.awaitAmt}
}
