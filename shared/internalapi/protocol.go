package internalapi

import (
	"fmt"
	"strconv"
)

// The protocol version of the link between the planes, exchanged on every node request
// (HeaderProtocol, sent by the node) and every answer to one (sent by the control plane),
// as tailscale's CapabilityVersion is. It counts changes to the internal API that the other
// end must know of: new or changed paths, fields or meanings. docs/upgrades.md says how
// versions move and which ones work together.
const (
	// ProtocolVersion is this build's version of the internal API. Version 2 adds the
	// snapshot's revoked keys (snapshot.Content.Revoked); version 1 nodes get snapshots
	// without them. Version 3 adds spend budgets (snapshot.Account.Budget, Key.Budget,
	// Content.Spent and the Spent of usage replies and balance updates); nodes of
	// version 2 and older get snapshots without them.
	ProtocolVersion = 3
	// MinProtocolVersion is the oldest node version this build's control plane serves.
	// Raised only by a release that drops support for older nodes, never above
	// ProtocolVersion.
	MinProtocolVersion = 1
	// HeaderProtocol carries the sender's ProtocolVersion. A node that sends none is
	// treated as version 1, the version before the header existed.
	HeaderProtocol = "X-Gateway-Protocol"
)

// ParseProtocol reads a HeaderProtocol value: empty is version 1; anything but a positive
// decimal integer is an error.
func ParseProtocol(s string) (int, error) {
	if s == "" {
		return 1, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 || len(s) > 9 {
		return 0, fmt.Errorf("%s %q is not a positive integer", HeaderProtocol, s)
	}
	return v, nil
}

// NodeProtocolSupported reports whether a control plane of this build serves a node that
// speaks version v: from MinProtocolVersion up to its own. A node newer than its control
// plane is refused, since the control plane cannot know what the node expects: upgrade
// the control plane first.
func NodeProtocolSupported(v int) bool { return v >= MinProtocolVersion && v <= ProtocolVersion }
