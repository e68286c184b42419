// Command dataplane runs a data-plane node: the public listener of the gateway
// (dataplane/node wires it; docs/configuration.md lists its settings).
package main

import (
	"os"

	"github.com/sekgate/gateway/dataplane/node"
)

func main() { node.Main(os.Args[1:]) }
