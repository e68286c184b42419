package simulator

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sekgate/gateway/internal/flagenv"
	"github.com/sekgate/gateway/internal/version"
)

// Main runs the simulator command with its arguments (args).
func Main(args []string) {
	if version.Requested(args) {
		version.Print(os.Stdout, "simulator")
		return
	}
	if err := runMain(args); err != nil {
		fmt.Fprintln(os.Stderr, "simulator:", err)
		os.Exit(1)
	}
}

func runMain(args []string) error {
	fs := flag.NewFlagSet("simulator", flag.ContinueOnError)
	var (
		cfg    Config
		listen = fs.String("listen", "127.0.0.1:8090", "address to listen on")
		models = fs.String("models", strings.Join(DefaultModels, ","), "comma-separated model IDs listed by GET /v1/models")
		debug  = fs.Bool("debug", false, "log at debug level")
	)
	fs.StringVar(&cfg.Name, "name", "sim", "name reported in logs and /sim/stats")
	fs.IntVar(&cfg.EmbeddingDims, "embedding-dims", 768, "default embedding dimensions")
	fs.IntVar(&cfg.Knobs.LatencyMS, "latency-ms", 0, "delay before every answer, in ms")
	fs.IntVar(&cfg.Knobs.TTFTMS, "ttft-ms", 0, "time to first token, in ms")
	fs.Float64Var(&cfg.Knobs.TokensPerSecond, "tokens-per-second", 0, "generation pace (0 = unpaced)")
	fs.Float64Var(&cfg.Knobs.ErrorRate, "error-rate", 0, "fraction of requests answered with --error-status (0..1)")
	fs.IntVar(&cfg.Knobs.ErrorStatus, "error-status", 503, "status of --error-rate failures")
	fs.IntVar(&cfg.Knobs.Status, "status", 0, "fail every request with this status (0 = off)")
	fs.IntVar(&cfg.Knobs.RetryAfterS, "retry-after", 0, "Retry-After seconds on injected errors (0 = none)")
	fs.IntVar(&cfg.Knobs.OutputTokens, "output-tokens", 16, "generated answer length in tokens")
	fs.IntVar(&cfg.Knobs.FailAfterEvents, "fail-after-events", 0, "break streams after this many events (0 = never)")
	fs.IntVar(&cfg.Engine.Slots, "engine-slots", 0, "vLLM-like engine: requests running at once (0 = engine off)")
	fs.DurationVar(&cfg.Engine.Overhead, "engine-overhead", 0, "vLLM-like engine: fixed part of the time to first token")
	fs.DurationVar(&cfg.Engine.PrefillPerToken, "engine-prefill-per-token", 0, "vLLM-like engine: prefill time per uncached prompt token")
	fs.DurationVar(&cfg.Engine.PerOutputToken, "engine-per-output-token", 0, "vLLM-like engine: time per output token")
	fs.IntVar(&cfg.Engine.CacheBlocks, "engine-cache-blocks", 8192, "vLLM-like engine: prefix cache capacity in 16-token blocks")
	if err := flagenv.Parse(fs, args, "GATEWAY_SIM_", nil); err != nil {
		if flagenv.Done(err) {
			return nil
		}
		return err
	}
	if *models != "" {
		cfg.Models = strings.Split(*models, ",")
	}
	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := New(cfg)
	if err := s.Start(context.Background(), *listen); err != nil {
		return err
	}
	<-ctx.Done()
	cfg.Logger.Info("simulator stopping", "name", cfg.Name, "stats", s.Stats())
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(sctx); err != nil {
		return s.Close()
	}
	return s.Close()
}
