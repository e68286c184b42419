// Command benchingest is `make bench-ingest` (and `make bench-ingest-short`): simulated
// data-plane nodes post usage batches into a real control plane and Postgres, and it
// reports records/s, CPU per 1,000 records, batch latency and storage growth per node
// count and batch size, into benchingest.json, benchingest.md and benchingest.svg. See package benchingest.
package main

import (
	"os"

	"github.com/sekgate/gateway/deploy/tools/benchingest"
)

func main() { benchingest.Main(os.Args[1:]) }
