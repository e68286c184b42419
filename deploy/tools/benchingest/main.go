package benchingest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sekgate/gateway/internal/flagenv"
	"github.com/sekgate/gateway/internal/version"
)

// Main runs the benchingest command with its arguments (args).
func Main(args []string) {
	if version.Requested(args) {
		version.Print(os.Stdout, "benchingest")
		return
	}
	var cfg Config
	fs := flag.NewFlagSet("benchingest", flag.ExitOnError)
	fs.BoolVar(&cfg.Short, "short", false, "quick check: fewer and shorter scenarios")
	fs.StringVar(&cfg.BinDir, "bin", "bin", "directory with the controlplane binary")
	fs.StringVar(&cfg.OutDir, "out", "bench-results", "output directory")
	fs.DurationVar(&cfg.Duration, "duration", 0, "duration of each scenario (default 20s, short 4s)")
	fs.IntVar(&cfg.Accounts, "accounts", 0, "accounts the records are spread over (default 50)")
	fs.Int64Var(&cfg.SizeFill, "size-fill", 0, "records the table-size rows fill the records with first (default 4000000, short 200000; negative: no table-size rows)")
	fs.StringVar(&cfg.ProfileDir, "profile", "", "directory for a CPU profile of the control plane per scenario (controlplane-<nodes>x<batch>.pprof); empty: none")
	nodes := fs.String("nodes", "", "comma-separated node counts (default 1,4,16; short 1,4)")
	batches := fs.String("batches", "", "comma-separated batch sizes (default 10,100,500,2000; short 100,500)")
	_ = fs.Parse(args)
	var err error
	if cfg.Nodes, err = flagenv.PositiveInts(*nodes, "count"); err == nil {
		cfg.Batches, err = flagenv.PositiveInts(*batches, "count")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchingest:", err)
		os.Exit(2)
	}
	cfg.Progress = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := Run(ctx, cfg)
	if rep != nil && len(rep.Results) > 0 {
		fmt.Print(rep.Markdown())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchingest:", err)
		os.Exit(1)
	}
}
