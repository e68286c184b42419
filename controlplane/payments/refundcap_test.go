package payments

import (
	"fmt"
	"sync"
	"testing"
)

// TestRefundsCappedPerSession: refund events of several charges of one payment intent
// together debit at most what the checkout session credited (before: each charge was
// capped at the session's amount, so seven charges debited seven times 100 SEK). Events
// delivered at once do not race past the cap.
func TestRefundsCappedPerSession(t *testing.T) {
	f := newFixture(t)
	f.paidSession(t, "cs_multi", 10000) // 100 SEK, payment intent pi_cs_multi
	// A partial refund of one charge, then full refunds of seven charges, at once.
	f.deliverSigned(t, chargeRefundedJSON("evt_m0", "ch_m0", "pi_cs_multi", 10000, 2500, false))
	if b := f.balanceOf(t, f.account); b != 75_000_000 {
		t.Fatalf("after a 25 SEK refund: balance %d", b)
	}
	var wg sync.WaitGroup
	for i := range 7 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.deliverSigned(t, chargeRefundedJSON(fmt.Sprintf("evt_m%d", i+1), fmt.Sprintf("ch_m%d", i+1), "pi_cs_multi", 10000, 10000, false))
		}()
	}
	wg.Wait()
	if b := f.balanceOf(t, f.account); b != 0 {
		t.Fatalf("balance %d after refunds of eight charges of one 100 SEK session, want 0", b)
	}
	if n := f.count(t, `SELECT -sum(amount_micro_sek) FROM ledger WHERE kind = 'refund' AND account_id = $1`, f.account); n != 100_000_000 {
		t.Fatalf("refunded %d micro-SEK, want the 100 SEK paid", n)
	}
	refunded, already := 0, 0
	for i := range 7 {
		switch f.outcome(t, fmt.Sprintf("evt_m%d", i+1)) {
		case string(OutcomeRefunded):
			refunded++
		case string(OutcomeAlreadyRefunded):
			already++
		}
	}
	if refunded < 1 || refunded+already != 7 {
		t.Fatalf("outcomes: %d refunded, %d already refunded, want 7 in all", refunded, already)
	}
}
