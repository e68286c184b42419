// Package internalapi names the paths and headers of the internal connection between
// data-plane nodes and the control plane. Nodes always dial out; the control plane never
// calls a node.
package internalapi

// Paths served by the control plane's internal listener.
const (
	// PathSnapshot: GET ?have=<version>&wait=<seconds>. 200 with a snapshot.Snapshot when the
	// node's version differs from the current one, 304 when nothing changed within wait.
	// The have parameter doubles as the acknowledgement of the version the node applied.
	PathSnapshot = "/internal/v1/snapshot"
	// PathUsage: POST a usage.Batch, answered with usage.Reply once committed.
	PathUsage = "/internal/v1/usage"
	// PathBalances: GET ?since=<seq>&wait=<seconds>, answered with usage.BalanceUpdate
	// (empty Balances when nothing changed within wait).
	PathBalances = "/internal/v1/balances"
)

// Headers of the internal connection.
const (
	// HeaderNodeID names the calling node; its token is sent as Authorization: Bearer.
	HeaderNodeID = "X-Node-Id"
	// HeaderAccountID and HeaderKeyID carry the identity the node authenticated when it
	// forwards a customer request (/v1/service/*) to the control plane. The control plane
	// trusts them only on requests that carry a valid node token.
	HeaderAccountID = "X-Gateway-Account-Id"
	HeaderKeyID     = "X-Gateway-Key-Id"
	// HeaderRequestID is the request ID the node assigned.
	HeaderRequestID = "X-Request-Id"
)
