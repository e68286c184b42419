// Command benchrun is `make bench`: it starts the simulator, the control plane (with a
// throwaway Postgres), a bare fasthttp proxy and a data plane from already built binaries,
// drives the same load at the simulator directly, the bare proxy and the data plane, and
// writes benchrun.json, summary.md and latency.png to the output directory. See package benchrun.
package main

import (
	"os"

	"github.com/sekgate/gateway/deploy/tools/benchrun"
)

func main() { benchrun.Main(os.Args[1:]) }
