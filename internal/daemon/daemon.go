// Package daemon runs a long-lived command: a text logger at the configured level, a
// context cancelled by SIGINT or SIGTERM (Signal tells which), and the process exit status.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/sekgate/gateway/internal/flagenv"
	"github.com/sekgate/gateway/internal/version"
)

// Logger returns a text logger on standard error at level ("debug", "info", "warn", "error").
func Logger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

// Run calls run with a logger at level and a context that ends on SIGINT or SIGTERM
// (Signal tells which), then exits: 2 for a bad level, 1 when run fails, 0 otherwise.
func Run(name, level string, run func(ctx context.Context, log *slog.Logger) error) {
	log, err := Logger(level)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(2)
	}
	logRuntime(log, name)
	ctx, stop := signalContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err = run(ctx, log)
	stop()
	if err != nil {
		log.Error(name+" stopped", "err", err)
		os.Exit(1)
	}
}

// signalCause is the cause of a context that signalContext ended.
type signalCause struct{ sig os.Signal }

func (c signalCause) Error() string { return c.sig.String() + " signal received" }

// signalContext is signal.NotifyContext with the signal as the context's cause, so that
// Signal can tell which one ended it.
func signalContext(parent context.Context, sigs ...os.Signal) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	go func() {
		select {
		case s := <-ch:
			cancel(signalCause{s})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel(context.Canceled)
	}
}

// Signal returns the signal that ended ctx, a context Run gave, or nil when no signal did.
func Signal(ctx context.Context) os.Signal {
	var c signalCause
	if errors.As(context.Cause(ctx), &c) {
		return c.sig
	}
	return nil
}

// logRuntime logs the Go runtime's settings the process started with. They come from the
// standard environment variables the deployment files set (GOGC, GOMEMLIMIT, GODEBUG);
// "schedtrace" in GODEBUG is the data plane's recommended monitor setting
// (docs/configuration.md), so its presence is logged by name.
func logRuntime(log *slog.Logger, name string) {
	godebug := os.Getenv("GODEBUG")
	log.Info(name+" runtime settings", "GOGC", orDefault(os.Getenv("GOGC"), "100"),
		"GOMEMLIMIT", orDefault(os.Getenv("GOMEMLIMIT"), "off"), "GODEBUG", godebug,
		"monitor_awake", strings.Contains(godebug, "schedtrace="))
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// Main is the whole main of a long-lived command named name: --version, then its settings
// (parse; --help and --print-config end it with 0, bad settings with 2), then Run at the
// settings' log level.
func Main[C any](name string, args []string, parse func([]string) (C, error), level func(C) string,
	run func(context.Context, C, *slog.Logger) error) {
	if version.Requested(args) {
		version.Print(os.Stdout, name)
		return
	}
	cfg, err := parse(args)
	if flagenv.Done(err) {
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(2)
	}
	Run(name, level(cfg), func(ctx context.Context, log *slog.Logger) error { return run(ctx, cfg, log) })
}
