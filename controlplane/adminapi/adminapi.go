// Package adminapi owns the admin API's wire types: the bodies the control plane's admin
// handlers answer and accept, which gatewayctl's client sends and decodes.
package adminapi

import (
	"encoding/json"
	"time"

	"github.com/sekgate/gateway/shared/snapshot"
)

// List is the {data: [...]} wrapper of list answers.
type List[T any] struct {
	Data []T `json:"data"`
}

// Account is an account as the admin API shows it.
type Account struct {
	ID              string           `json:"id"`
	Customer        string           `json:"customer"`
	Residency       string           `json:"residency"`
	Suspended       bool             `json:"suspended"`
	CreatedAt       time.Time        `json:"created_at"`
	BalanceMicroSEK int64            `json:"balance_micro_sek"`
	BalanceSEK      string           `json:"balance_sek"` // exact decimal string
	Models          []string         `json:"models"`
	Limits          *snapshot.Limits `json:"limits,omitempty"`
	// EffectiveLimits are the limits the nodes apply to the account: its own, else the
	// deployment's defaults.
	EffectiveLimits *EffectiveLimits `json:"effective_limits,omitempty"`
	// SuspensionReason is the operator's reason for the suspension (empty: none given, or
	// not suspended).
	SuspensionReason string `json:"suspension_reason,omitempty"`
	// QueueWeight is the account's weight in the nodes' fair queue (1..100): while every
	// model server is full, it gets that many turns for each turn of a weight-1 account.
	QueueWeight int `json:"queue_weight"`
}

// CreateAccountRequest is the body of POST /admin/v1/accounts.
type CreateAccountRequest struct {
	Customer  string `json:"customer"`
	Residency string `json:"residency"`
	// QueueWeight is the fair-queue weight, 1..100; absent (0 here) means 1.
	QueueWeight int `json:"queue_weight,omitempty"`
}

// PatchAccountRequest is the body of PATCH /admin/v1/accounts/{id}; absent fields are left
// as they are. Limits is a JSON object, or null to clear the account's limits.
type PatchAccountRequest struct {
	Residency *string `json:"residency,omitempty"`
	Suspended *bool   `json:"suspended,omitempty"`
	// SuspensionReason says why the account is suspended (with Suspended true).
	SuspensionReason string          `json:"suspension_reason,omitempty"`
	Limits           json.RawMessage `json:"limits,omitempty"`
	// QueueWeight sets the fair-queue weight, 1..100.
	QueueWeight *int `json:"queue_weight,omitempty"`
}

// CreditRequest is the body of POST /admin/v1/accounts/{id}/credits as a client sends it.
// The server decodes amount_sek itself, to refuse a JSON number with a clear message.
type CreditRequest struct {
	AmountSEK string `json:"amount_sek"` // exact decimal string, e.g. "100.00"
	Note      string `json:"note,omitempty"`
	Reference string `json:"reference,omitempty"` // idempotency: one credit per reference
}

// Credit is the answer of POST /admin/v1/accounts/{id}/credits.
type Credit struct {
	EntryID int64 `json:"entry_id"`
	// Applied is false when the reference had already been credited.
	Applied         *bool  `json:"applied,omitempty"`
	BalanceMicroSEK int64  `json:"balance_micro_sek"`
	BalanceSEK      string `json:"balance_sek"`
}

// CreateKeyRequest is the body of POST /admin/v1/accounts/{id}/keys as a client sends it.
// The server decodes expires_in_days itself, to refuse a non-integer with a clear message.
type CreateKeyRequest struct {
	Name          string `json:"name,omitempty"`
	ExpiresInDays int    `json:"expires_in_days,omitempty"`
}

// Key is an API key; Secret is set only in the answer that created it.
type Key struct {
	ID        string           `json:"id"`
	Secret    string           `json:"secret,omitempty"`
	AccountID string           `json:"account_id"`
	Name      string           `json:"name"`
	CreatedAt time.Time        `json:"created_at"`
	ExpiresAt *time.Time       `json:"expires_at"`
	RevokedAt *time.Time       `json:"revoked_at"`
	Limits    *snapshot.Limits `json:"limits,omitempty"`
	// EffectiveLimits are the limits the nodes apply to the key's requests: its own, else
	// its account's, else the deployment's defaults.
	EffectiveLimits *EffectiveLimits `json:"effective_limits,omitempty"`
	// LastUsedAt is the time of the key's newest request record (null: none kept).
	LastUsedAt *time.Time `json:"last_used_at"`
}

// Route is a route of a model: the snapshot's route shape.
type Route = snapshot.Route

// Model is a catalogue model with its price, aliases and routes.
type Model struct {
	snapshot.Model
	Aliases []string `json:"aliases"` // never null
	Routes  []Route  `json:"routes"`
}

// CatalogResult is the answer of PUT /admin/v1/catalog.
type CatalogResult struct {
	Models int `json:"models"`
	Routes int `json:"routes"`
	// DryRun: the catalogue was checked, not loaded (PUT /admin/v1/catalog?dry_run=true).
	DryRun bool `json:"dry_run,omitempty"`
	// Warnings name what would keep nodes from using the catalogue's routes (a credential
	// they lack, a server they cannot reach), as the nodes last reported.
	Warnings []string `json:"warnings,omitempty"`
}

// ListedRoute is a route as GET /admin/v1/routes lists it: with the problems nodes report
// using it (node ID to problem: credential_missing, unreachable, tls, unauthorized).
type ListedRoute struct {
	snapshot.Route
	Problems map[string]string `json:"problems"`
	// Replicas are, for a route discovered from DNS, the replicas nodes report something
	// of (a breaker not closed, a problem), by address; absent otherwise.
	Replicas []ListedReplica `json:"replicas,omitempty"`
}

// ListedReplica is a replica of a discovered route as nodes report it: its route ID
// ("<route>@<ip:port>"), its address, its breaker where not closed and its problems, each
// by node ID.
type ListedReplica struct {
	ID       string            `json:"id"`
	Address  string            `json:"address"`
	Breakers map[string]string `json:"breakers"`
	Problems map[string]string `json:"problems"`
}

// Node is a data-plane node as the control plane last saw it.
type Node struct {
	NodeID         string    `json:"node_id"`
	AppliedVersion int64     `json:"applied_version"`
	LastSeen       time.Time `json:"last_seen"`
	Region         string    `json:"region"` // the node's --region as it last reported it; empty: none
	// SpoolAgeMs is how long the oldest record in the node's usage spool had waited for
	// confirmation when the node last reported it (SpoolReportedAt; null: never), in
	// milliseconds; 0: its spool was empty.
	SpoolAgeMs      int64      `json:"spool_age_ms"`
	SpoolReportedAt *time.Time `json:"spool_reported_at"`
	// Breakers maps the routes whose circuit breaker the node last reported as not closed
	// to "open" or "half-open" (empty: all closed), at BreakersReportedAt; null: never
	// reported.
	Breakers           map[string]string `json:"breakers"`
	BreakersReportedAt *time.Time        `json:"breakers_reported_at"`
	// RouteProblems maps the routes the node last reported it cannot use to the problem
	// (credential_missing, unreachable, tls, unauthorized), and Credentials names the route
	// credentials it has, at RouteHealthReportedAt; null: never reported.
	RouteProblems         map[string]string `json:"route_problems"`
	Credentials           []string          `json:"credentials"`
	RouteHealthReportedAt *time.Time        `json:"route_health_reported_at"`
	// LimitsMode is how the node enforces account and key limits as this control plane
	// knows it: "shared" (it reported to the fleet exchange within three of its intervals
	// and enforces its share) or "fallback" (it said it was enforcing its local fallback
	// share, or it has not reported since); null: no report in the last ten minutes.
	// FleetReportedAt is its last fleet report.
	LimitsMode      *string    `json:"limits_mode"`
	FleetReportedAt *time.Time `json:"fleet_reported_at"`
	// StartFeed is the node's start feed as its last fleet report said: "live" (it hears
	// every node and takes the servers' free slots whole), "split" (it has one but does
	// not hear every node, and splits the servers' reports) or "off"; null with LimitsMode.
	StartFeed *string `json:"start_feed"`
}

// RejectedRecord is a usage record the control plane refused, with the record as the node
// sent it.
type RejectedRecord struct {
	ID         int64     `json:"id"`
	RequestID  string    `json:"request_id"`
	AccountID  string    `json:"account_id"`
	NodeID     string    `json:"node_id"`
	BatchID    string    `json:"batch_id"`
	Reason     string    `json:"reason"`
	Record     string    `json:"record"`
	ReceivedAt time.Time `json:"received_at"`
}

// RejectedRecords is the latest refused records and the count of all.
type RejectedRecords struct {
	Data  []RejectedRecord `json:"data"`
	Total int64            `json:"total"`
}

// SnapshotInfo describes the current snapshot.
type SnapshotInfo struct {
	Version     int64     `json:"version"`
	Hash        string    `json:"hash"`
	GeneratedAt time.Time `json:"generated_at"`
	BalanceSeq  int64     `json:"balance_seq"`
}

// Signup is an access request from the signup form.
type Signup struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	Email       string     `json:"email"`
	Company     string     `json:"company"`
	Residency   string     `json:"residency"`
	Volume      string     `json:"volume"`
	UseCase     string     `json:"use_case"`
	ClientAddr  string     `json:"client_addr"`
	Status      string     `json:"status"`
	ConsentedAt time.Time  `json:"consented_at"`
	CreatedAt   time.Time  `json:"created_at"`
	DecidedAt   *time.Time `json:"decided_at"`
	AccountID   *string    `json:"account_id"`
}

// ApproveSignupRequest is the body of POST /admin/v1/signups/{id}/approve.
type ApproveSignupRequest struct {
	CreateAccount bool   `json:"create_account"`
	Residency     string `json:"residency,omitempty"`
}
