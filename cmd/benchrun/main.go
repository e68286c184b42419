// Command benchrun is `make bench`: it starts the simulator, the control plane (with a
// throwaway Postgres), a bare fasthttp proxy and a data plane from already built binaries,
// drives the same load at the simulator directly, the bare proxy and the data plane, and
// writes bench.json, summary.md and latency.png to the output directory. See package bench.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sekgate/gateway/cmd/benchrun/bench"
)

func main() {
	var cfg bench.Config
	fs := flag.NewFlagSet("benchrun", flag.ExitOnError)
	fs.BoolVar(&cfg.Short, "short", false, "quick mode (under two minutes)")
	fs.BoolVar(&cfg.Smoke, "smoke", false, "token load for a few seconds: checks the machinery, measures nothing")
	fs.StringVar(&cfg.BinDir, "bin", "bin", "directory with simulator, controlplane, dataplane and bareproxy")
	fs.StringVar(&cfg.OutDir, "out", "bench-results", "output directory")
	fs.IntVar(&cfg.OpenStreams, "open-streams", 0, "streams of the open-streams scenario (default 10000, short 1000)")
	_ = fs.Parse(os.Args[1:])

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := bench.Run(ctx, cfg)
	if rep != nil {
		fmt.Println()
		fmt.Print(rep.Markdown())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		os.Exit(1)
	}
}
