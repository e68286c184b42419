// Command bareproxy is a bare fasthttp reverse proxy in front of one upstream: no auth, no
// routing, no metering, no body inspection. `make bench` runs it beside the data plane as
// the floor any gateway built on fasthttp can reach. Server-sent event streams are relayed
// with a flush at the end of every event (blank line), as the data plane does.
//
// Every flag can also be set by the environment variable GATEWAY_<FLAG_NAME_UPPER_SNAKE>.
package main

import (
	"os"

	"github.com/sekgate/gateway/deploy/tools/bareproxy"
)

func main() { bareproxy.Main(os.Args[1:]) }
