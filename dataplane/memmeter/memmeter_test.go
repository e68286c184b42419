package memmeter

import (
	"testing"
	"time"

	"github.com/sekgate/gateway/shared/usage"
)

// WaitCount returns as soon as the n-th record arrives, and false when it does not in time.
func TestWaitCount(t *testing.T) {
	m := New(2)
	if m.WaitCount(1, time.Millisecond) {
		t.Fatal("WaitCount reported a record that was never made")
	}
	done := make(chan bool)
	go func() { done <- m.WaitCount(3, time.Minute) }()
	for i := range 3 {
		m.Record(&usage.Record{RequestID: string(rune('a' + i)), AccountID: "acct", PriceMicroSEK: 1})
	}
	if !<-done {
		t.Fatal("WaitCount missed the records")
	}
	if m.Count() != 3 || len(m.Records()) != 2 || m.Spendable("acct") != -3 {
		t.Fatalf("count %d kept %d spendable %d", m.Count(), len(m.Records()), m.Spendable("acct"))
	}
	if !m.WaitCount(3, 0) {
		t.Fatal("WaitCount of records already made")
	}
}
