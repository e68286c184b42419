// Package usage holds the wire types of request records and the usage batches data-plane
// nodes send to the control plane.
package usage

import (
	"time"

	"github.com/sekgate/gateway/shared/snapshot"
)

// Result values of a request record.
const (
	ResultOK            = "ok"             // completed, terminal event seen for streams
	ResultIncomplete    = "incomplete"     // stream ended without its terminal event
	ResultCancelled     = "cancelled"      // client closed the connection
	ResultUpstreamError = "upstream_error" // provider answered an error or broke the protocol
	ResultTimeout       = "timeout"        // provider timed out
	ResultRateLimited   = "rate_limited"   // provider answered 429
	ResultNoRoute       = "no_route"       // no eligible route could take the request
	ResultRejected      = "rejected"       // refused after routing began (e.g. provider 4xx)
	// ResultInterrupted: the node stopped (crash, kill) while the stream was open; the record
	// was rebuilt from the stream's start entry when the node restarted.
	ResultInterrupted = "interrupted"
)

// MaxRecordTokens bounds each token count of one record: ten million, several times the
// largest context window any model offers. The control plane refuses a record over it
// (never charged), so a node refuses requests whose output bound could pass it and clamps
// what it records to it: nothing served goes unrecorded.
const MaxRecordTokens int64 = 10_000_000

// Record is one request's execution metadata. It never holds prompt or answer content.
type Record struct {
	RequestID        string    `json:"request_id"`
	TS               time.Time `json:"ts"`
	AccountID        string    `json:"account_id"`
	KeyID            *string   `json:"key_id"` // nil for console test-box requests
	Model            string    `json:"model"`  // canonical model ID
	Endpoint         string    `json:"endpoint"`
	Stream           bool      `json:"stream"`
	Provider         string    `json:"provider,omitempty"`
	Residency        string    `json:"residency,omitempty"` // region of the route that answered
	Status           int       `json:"status"`
	Result           string    `json:"result"`
	PromptTokens     int64     `json:"prompt_tokens"`
	CompletionTokens int64     `json:"completion_tokens"`
	PriceMicroSEK    int64     `json:"price_micro_sek"`
	DurationMS       int64     `json:"duration_ms"`
	// TTFTMS is a stream's time to its first event in milliseconds, rounded up (so a
	// measured time is at least 1); 0 (omitted) when not measured: not a stream, or no
	// event came. The control plane keeps it in its per-minute series only.
	TTFTMS  int64    `json:"ttft_ms,omitempty"`
	Routing *Routing `json:"routing,omitempty"`
}

// Routing records how a request was routed.
type Routing struct {
	Policy string `json:"policy"` // account residency policy
	// NodeRegion is the region name of the data-plane node that served the request (its
	// --region, e.g. "se-sto"); empty when the node has none.
	NodeRegion string `json:"node_region,omitempty"`
	Translated bool   `json:"translated,omitempty"` // served through chat completions
	// UsageEstimated: the provider reported no usage for part of what was charged (a stream
	// cut short, or a node interrupted mid-stream), so those tokens are the node's estimate.
	UsageEstimated bool `json:"usage_estimated,omitempty"`
	// OutputUnderreported: the output delivered to the client, by the node's low estimate
	// from its text, exceeded what the provider reported by more than the tolerance (a
	// tenth, and at least 2 tokens), so the delivered estimate was charged; ReportedOutput
	// is then what the provider reported.
	OutputUnderreported bool  `json:"output_underreported,omitempty"`
	ReportedOutput      int64 `json:"reported_output_tokens,omitempty"`
	// Balancer is the model's routing policy that ordered the routes (scored, weighted,
	// least_load, affinity) and Reason why the first route tried came first (affinity:
	// the replica the prompt's prefix prefers; load: another, less loaded one; weighted: a
	// weighted random draw; only: it was the only one).
	Balancer string `json:"balancer,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// ServerQueue is the waiting queue the first route's server reported at dispatch
	// (omitted when zero or when no fresh report was held); InFlight the node's own
	// requests at that route then; QueuedMS the time the request waited in the node's fair
	// queue because every eligible route was saturated.
	ServerQueue int64     `json:"server_queue,omitempty"`
	InFlight    int64     `json:"in_flight,omitempty"`
	QueuedMS    int64     `json:"queued_ms,omitempty"`
	Attempts    []Attempt `json:"attempts"`
}

// Attempt is one try at one route.
type Attempt struct {
	Route      string `json:"route"`
	Provider   string `json:"provider"`
	Region     string `json:"region"`
	Status     int    `json:"status"`          // upstream HTTP status, 0 when none was received
	Error      string `json:"error,omitempty"` // transport error class, e.g. "connect", "timeout"
	DurationMS int64  `json:"duration_ms"`
}

// Batch is a group of records sent together. BatchID is unique per node and batch; the
// control plane's exactly-once guarantee rests on RequestID, not on BatchID.
type Batch struct {
	NodeID  string   `json:"node_id"`
	BatchID string   `json:"batch_id"`
	Records []Record `json:"records"`
}

// Reply confirms a batch. Once a node has it, the batch may leave the spool.
type Reply struct {
	BatchID    string `json:"batch_id"`
	Inserted   int    `json:"inserted"`
	Duplicates int    `json:"duplicates"`
	// Rejected counts records the control plane refused (kept in its rejected_records,
	// never charged). They are settled too: the batch may leave the spool.
	Rejected   int                `json:"rejected,omitempty"`
	Balances   []snapshot.Balance `json:"balances"`    // accounts touched by the batch
	BalanceSeq int64              `json:"balance_seq"` // ledger position the balances reflect
	// Spent is, as of BalanceSeq, the current period's spend of the touched accounts and
	// their keys that have a budget (protocol 3; older nodes ignore it).
	Spent []snapshot.Spent `json:"spent,omitempty"`
}

// BalanceUpdate answers a balance watch: balances changed since the asked sequence.
type BalanceUpdate struct {
	Seq      int64              `json:"seq"`
	Balances []snapshot.Balance `json:"balances"`
	// Spent is the current period's spend of the listed accounts and their keys that have
	// a budget, as of Seq (protocol 3; older nodes ignore it).
	Spent []snapshot.Spent `json:"spent,omitempty"`
}
