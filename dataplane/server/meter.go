package server

import (
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

// Meter is the server's view of metering: it admits requests against the account's
// spendable balance and takes every routed request's record. dataplane/meter provides the
// production implementation; dataplane/memmeter an in-memory one.
type Meter interface {
	// Record hands a finished request's record to metering. It must be fast and must not
	// block; rec (and what it points to) is reused once Record returns.
	Record(rec *usage.Record)
	// Start takes the start entry of a stream about to be committed: the record the
	// request gets if the node dies before the stream ends (result interrupted). The
	// stream's Record supersedes it. Like Record it must be fast; rec may be reused after
	// it returns.
	Start(rec *usage.Record)
	// Spendable is the account's known balance minus spend not yet confirmed (micro-SEK).
	Spendable(accountID string) int64
	// SeedBalances replaces known balances with those of a snapshot taken at ledger seq.
	SeedBalances(b []snapshot.Balance, seq int64)
}
