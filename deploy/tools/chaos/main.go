package chaos

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

// Main runs the chaos command with its arguments (args).
func Main(args []string) {
	if version.Requested(args) {
		version.Print(os.Stdout, "chaos")
		return
	}
	var cfg Config
	fs := flag.NewFlagSet("chaos", flag.ExitOnError)
	fs.StringVar(&cfg.BinDir, "bin", "bin", "directory with simulator, controlplane and dataplane")
	fs.StringVar(&cfg.WorkDir, "work-dir", "", "directory for logs and spools (default: a temporary one, removed after a passing run)")
	fs.BoolVar(&cfg.Short, "short", false, "every scenario at small scale (seconds each)")
	fs.IntVar(&cfg.Workers, "workers", 0, "concurrent clients (default 16, short 6)")
	fs.IntVar(&cfg.Accounts, "accounts", 0, "customer accounts (default 4)")
	fs.IntVar(&cfg.Nodes, "nodes", 0, "data planes (default 2)")
	fs.DurationVar(&cfg.Warm, "warm", 0, "load before each fault (default 10s, short 2s)")
	fs.DurationVar(&cfg.Down, "down", 0, "how long the faulty part stays down (default 15s, short 2s)")
	fs.DurationVar(&cfg.Cool, "cool", 0, "load after recovery (default 10s, short 2s)")
	fs.Float64Var(&cfg.HostileShare, "hostile-share", 0, "share of requests to the hostile upstream (default 0.15)")
	only := fs.String("only", "", "comma-separated scenarios (steady, kill-control-plane, term-control-plane, kill-data-plane, restart-postgres, kill-hostile-upstream; default all)")
	if err := flagenv.Parse(fs, args, "GATEWAY_CHAOS_", nil); flagenv.Done(err) {
		return
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	if *only != "" {
		cfg.Only = strings.Split(*only, ",")
	}
	cfg.Progress = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rep.Print(os.Stdout)
	if !rep.Passed() {
		os.Exit(1)
	}
}
