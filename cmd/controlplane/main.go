// Command controlplane runs the gateway's control plane backed by Postgres
// (controlplane/plane wires it; docs/configuration.md lists its settings).
package main

import (
	"os"

	"github.com/sekgate/gateway/controlplane/plane"
)

func main() { plane.Main(os.Args[1:]) }
