// Package daemon runs a long-lived command: a text logger at the configured level, a
// context cancelled by SIGINT or SIGTERM, and the process exit status.
package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// Logger returns a text logger on standard error at level ("debug", "info", "warn", "error").
func Logger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

// Run calls run with a logger at level and a context that ends on SIGINT or SIGTERM, then
// exits: 2 for a bad level, 1 when run fails, 0 otherwise.
func Run(name, level string, run func(ctx context.Context, log *slog.Logger) error) {
	log, err := Logger(level)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err = run(ctx, log)
	stop()
	if err != nil {
		log.Error(name+" stopped", "err", err)
		os.Exit(1)
	}
}
