package bareproxy

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sekgate/gateway/internal/flagenv"
	"github.com/sekgate/gateway/internal/version"
)

// Main runs the bareproxy command with its arguments (args).
func Main(args []string) {
	if version.Requested(args) {
		version.Print(os.Stdout, "bareproxy")
		return
	}
	if err := runMain(args); err != nil {
		fmt.Fprintln(os.Stderr, "bareproxy:", err)
		os.Exit(1)
	}
}

func runMain(args []string) error {
	fs := flag.NewFlagSet("bareproxy", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8085", "address to listen on")
	var cfg Config
	fs.StringVar(&cfg.Upstream, "upstream", "127.0.0.1:8090", "upstream host:port (plain HTTP)")
	fs.IntVar(&cfg.MaxConns, "max-conns", 0, "most connections to the upstream (0 = 20,000)")
	if err := flagenv.Parse(fs, args, "GATEWAY_", nil); err != nil {
		if flagenv.Done(err) {
			return nil
		}
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	p, err := New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", *listen, err)
	}
	log.Info("bare proxy listening", "addr", ln.Addr().String(), "upstream", cfg.Upstream)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- p.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return p.Shutdown(sctx)
}
