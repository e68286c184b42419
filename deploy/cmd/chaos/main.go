// Command chaos is `make chaos` (and `make chaos-short`): the real control plane, data
// planes and provider simulators on a throwaway Postgres, under steady mixed load with a
// hostile upstream, through a control-plane kill, a data-plane kill, a Postgres restart
// and a hostile-upstream kill, with exact accounting checked after each. It prints one
// table row per scenario and exits 1 when any verdict fails. See package chaos. Every flag
// can also be set by the environment variable GATEWAY_CHAOS_<FLAG_NAME_UPPER_SNAKE>.
package main

import (
	"os"

	"github.com/sekgate/gateway/deploy/tools/chaos"
)

func main() { chaos.Main(os.Args[1:]) }
