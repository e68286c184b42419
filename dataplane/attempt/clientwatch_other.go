//go:build !unix

package attempt

import (
	"net"
	"time"

	"github.com/sekgate/gateway/dataplane/proxy"
)

// clientWatch is a no-op where sockets cannot be peeked: a client's disconnect is noticed
// at the next write to it.
type clientWatch struct{}

func (w *clientWatch) start(net.Conn, *proxy.Call, time.Duration) {}
func (w *clientWatch) stop()                                      {}
