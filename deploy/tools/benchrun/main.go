package benchrun

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/sekgate/gateway/internal/flagenv"
	"github.com/sekgate/gateway/internal/version"
)

// Main runs the benchrun command with its arguments (args).
func Main(args []string) {
	if version.Requested(args) {
		version.Print(os.Stdout, "benchrun")
		return
	}
	var cfg Config
	fs := flag.NewFlagSet("benchrun", flag.ExitOnError)
	fs.BoolVar(&cfg.Short, "short", false, "quick mode (under two minutes)")
	fs.BoolVar(&cfg.Smoke, "smoke", false, "token load for a few seconds: checks the machinery, measures nothing")
	fs.StringVar(&cfg.BinDir, "bin", "bin", "directory with simulator, controlplane, dataplane and bareproxy")
	fs.StringVar(&cfg.OutDir, "out", "bench-results", "output directory")
	fs.IntVar(&cfg.OpenStreams, "open-streams", 0, "streams of the open-streams scenario (default 10000, short 1000)")
	only := fs.String("only", "", "comma-separated scenarios to run: open, fixed, max, stream (default all)")
	rates := fs.String("rates", "", "comma-separated fixed rates (req/s), replacing the mode's")
	bodies := fs.String("bodies", "", "comma-separated request bodies: 1KiB, 64KiB (default both)")
	fs.BoolVar(&cfg.NoVariants, "no-variants", false, "leave out the data plane's variants at fixed rates (access log off, tracing on, alone with its usage going to a sink)")
	fs.DurationVar(&cfg.StepDur, "step", 0, "duration of each fixed-rate and search step, replacing the mode's")
	_ = fs.Parse(args)
	if *only != "" {
		cfg.Only = strings.Split(*only, ",")
	}
	if *bodies != "" {
		cfg.Bodies = strings.Split(*bodies, ",")
	}
	var err error
	if cfg.Rates, err = flagenv.PositiveInts(*rates, "rate"); err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := Run(ctx, cfg)
	if rep != nil {
		fmt.Println()
		fmt.Print(rep.Markdown())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		os.Exit(1)
	}
}
