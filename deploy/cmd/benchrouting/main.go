// Command benchrouting is `make bench-routing`: routing policies against vLLM-like
// simulator replicas, same arrivals for each. See package benchrouting.
package main

import (
	"os"

	"github.com/sekgate/gateway/deploy/tools/benchrouting"
)

func main() { benchrouting.Main(os.Args[1:]) }
