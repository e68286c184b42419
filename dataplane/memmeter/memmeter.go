// Package memmeter is an in-memory meter for tests and for running a node without usage
// transport: it charges records against balances seeded from snapshots and keeps the most
// recent records. It never sends anything anywhere.
package memmeter

import (
	"slices"
	"sync"
	"time"

	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

// DefaultKeep is how many recent records a Meter keeps when Keep is 0.
const DefaultKeep = 1024

// Meter implements the data plane's Meter interface in memory.
type Meter struct {
	mu       sync.Mutex
	balances map[string]int64 // known balance as of seq
	spent    map[string]int64 // spend recorded since
	seq      int64
	keep     int
	records  []*usage.Record
	total    int
	starts   map[string]usage.Record // start entries of streams not yet recorded
	// recorded is closed at the next Record; made only while someone waits (WaitCount).
	recorded chan struct{}
}

// New returns a Meter keeping the last keep records (DefaultKeep when keep <= 0).
func New(keep int) *Meter {
	if keep <= 0 {
		keep = DefaultKeep
	}
	return &Meter{balances: map[string]int64{}, spent: map[string]int64{}, keep: keep, starts: map[string]usage.Record{}}
}

// Start keeps a copy of a stream's start entry until the stream's record arrives. The
// in-memory meter survives nothing, so it never turns them into records.
func (m *Meter) Start(rec *usage.Record) {
	c := *rec
	if rec.Routing != nil {
		r := *rec.Routing
		r.Attempts = append([]usage.Attempt(nil), r.Attempts...)
		c.Routing = &r
	}
	m.mu.Lock()
	m.starts[rec.RequestID] = c
	m.mu.Unlock()
}

// Started returns the start entry of an open stream.
func (m *Meter) Started(requestID string) (usage.Record, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.starts[requestID]
	return r, ok
}

// Record charges rec's price to its account and keeps a copy of rec (the caller may reuse
// rec once Record returns).
func (m *Meter) Record(rec *usage.Record) {
	m.mu.Lock()
	m.spent[rec.AccountID] += rec.PriceMicroSEK
	if len(m.records) >= m.keep {
		copy(m.records, m.records[1:])
		m.records = m.records[:len(m.records)-1]
	}
	m.records = append(m.records, clone(rec))
	m.total++
	if len(m.starts) > 0 {
		delete(m.starts, rec.RequestID)
	}
	if m.recorded != nil {
		close(m.recorded)
		m.recorded = nil
	}
	m.mu.Unlock()
}

// Hold takes amount from the account's spendable balance when it covers it.
func (m *Meter) Hold(accountID string, amount int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.balances[accountID]-m.spent[accountID] < amount {
		return false
	}
	m.spent[accountID] += amount
	return true
}

// Release gives back what Hold took.
func (m *Meter) Release(accountID string, amount int64) {
	m.mu.Lock()
	m.spent[accountID] -= amount
	m.mu.Unlock()
}

// Spendable is the seeded balance minus the spend recorded since.
func (m *Meter) Spendable(accountID string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.balances[accountID] - m.spent[accountID]
}

// SeedBalances replaces the known balances when seq is not older than the current one. The
// in-memory meter has no confirmations, so spend recorded so far stays counted.
func (m *Meter) SeedBalances(b []snapshot.Balance, seq int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if seq < m.seq {
		return
	}
	m.seq = seq
	for _, x := range b {
		m.balances[x.AccountID] = x.MicroSEK
	}
}

// Records returns a copy of the kept records, oldest first.
func (m *Meter) Records() []*usage.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*usage.Record(nil), m.records...)
}

// Count is the number of records ever recorded.
func (m *Meter) Count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.total
}

// WaitCount waits until n records were ever recorded, woken by each Record rather than
// polling; it reports false when d passed first.
func (m *Meter) WaitCount(n int, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		m.mu.Lock()
		if m.total >= n {
			m.mu.Unlock()
			return true
		}
		if m.recorded == nil {
			m.recorded = make(chan struct{})
		}
		next := m.recorded
		m.mu.Unlock()
		select {
		case <-next:
		case <-timer.C:
			return false
		}
	}
}

// clone copies rec with what it points to.
func clone(rec *usage.Record) *usage.Record {
	c := *rec
	if rec.KeyID != nil {
		k := *rec.KeyID
		c.KeyID = &k
	}
	if rec.Routing != nil {
		r := *rec.Routing
		r.Attempts = slices.Clone(r.Attempts)
		c.Routing = &r
	}
	return &c
}
