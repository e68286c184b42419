// Package internalapi names the paths and headers of the internal connection between
// data-plane nodes and the control plane. Nodes always dial out; the control plane never
// calls a node.
package internalapi

import (
	"strconv"
	"strings"
	"time"
)

// Paths served by the control plane's internal listener.
const (
	// PathSnapshot: GET ?have=<version>&hash=<structure hash>&issued=<unix nanos>&
	// country=<ISO alpha-2>&region=<name>&wait=<seconds>. With country (the node's --country) the snapshot
	// is the one filtered for that country and says so in its signed content; without it,
	// the unfiltered one. region (the node's --region) is recorded for gatewayctl nodes list.
	// 200 with a signed snapshot.Snapshot when what the node holds is outdated (another
	// version, another content at that version, or an older issue), 304 when nothing changed
	// within wait. hash is snapshot.StructureHash of the node's content, issued its IssuedAt.
	// The have parameter doubles as the acknowledgement of the version the node applied.
	PathSnapshot = "/internal/v1/snapshot"
	// PathUsage: POST a usage.Batch, answered with usage.Reply once committed.
	PathUsage = "/internal/v1/usage"
	// PathBalances: GET ?since=<seq>&country=<ISO alpha-2>&wait=<seconds>, answered with
	// usage.BalanceUpdate (empty Balances when nothing changed within wait). With country
	// (the node's --country) only accounts whose residency policy admits it are listed, as
	// in the snapshot filtered for that country.
	PathBalances = "/internal/v1/balances"
)

// MinTokenBytes is the shortest admin or node token the planes accept at start.
const MinTokenBytes = 32

// Headers of the internal connection.
const (
	// HeaderNodeID names the calling node; its token is sent as Authorization: Bearer.
	HeaderNodeID = "X-Node-Id"
	// HeaderAccountID and HeaderKeyID carry the identity the node authenticated when it
	// forwards a customer request (/v1/service/*) to the control plane. The control plane
	// trusts them only on requests that carry a valid node token.
	HeaderAccountID = "X-Gateway-Account-Id"
	HeaderKeyID     = "X-Gateway-Key-Id"
	// HeaderTestBoxAccount names the account a console test-box request is sent for; the
	// control plane sends it to a data plane with a node token (dataplane/server testbox.go).
	HeaderTestBoxAccount = "X-Gateway-Test-Box-Account"
	// HeaderRequestID is the request ID the node assigned.
	HeaderRequestID = "X-Request-Id"
	// HeaderSpoolAge carries, on a node's snapshot polls, balance polls and usage batches,
	// how long the oldest record in its usage spool has waited for the control plane's
	// confirmation, in whole milliseconds (0: the spool is empty). Shown by gatewayctl
	// nodes list.
	HeaderSpoolAge = "X-Spool-Age-Ms"
)

// MaxSpoolAge is the largest spool age a node reports (longer ages are reported as it).
const MaxSpoolAge = 10 * 365 * 24 * time.Hour

// FormatSpoolAge is the HeaderSpoolAge value for d (negative counts as 0).
func FormatSpoolAge(d time.Duration) string {
	return strconv.FormatInt(int64(min(max(d, 0), MaxSpoolAge)/time.Millisecond), 10)
}

// ParseSpoolAge reads a HeaderSpoolAge value: whole milliseconds from 0 to MaxSpoolAge.
func ParseSpoolAge(v string) (time.Duration, bool) {
	if v == "" || len(v) > 12 || v[0] == '+' || v[0] == '-' {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > int64(MaxSpoolAge/time.Millisecond) {
		return 0, false
	}
	return time.Duration(n) * time.Millisecond, true
}

// ValidRegion reports whether r is a usable node region name: empty (none), or 1 to 63
// lower-case ASCII letters, digits and '-', not starting or ending with '-'.
func ValidRegion(r string) bool {
	if len(r) > 63 || strings.HasPrefix(r, "-") || strings.HasSuffix(r, "-") {
		return false
	}
	for i := 0; i < len(r); i++ {
		if c := r[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}
