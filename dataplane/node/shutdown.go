package node

import (
	"context"
	"log/slog"
	"time"

	"github.com/sekgate/gateway/dataplane/meter"
	"github.com/sekgate/gateway/dataplane/opsapi"
)

// shutdownOptions is how a node leaves: on SIGTERM it reports not ready and keeps
// serving for delay, then stops accepting and lets requests and streams end within
// drainTimeout, then waits up to flushTimeout for the control plane to confirm its spool.
type shutdownOptions struct {
	Delay        time.Duration `flag:"shutdown-delay" default:"5s" help:"after SIGTERM, how long /readyz answers 503 while the node still serves"`
	DrainTimeout time.Duration `flag:"drain-timeout" default:"10m" help:"then how long open requests and streams may run to their end"`
	FlushTimeout time.Duration `flag:"shutdown-flush-timeout" default:"15s" help:"then how long to wait for the control plane to confirm spooled usage"`
}

// drainer is the public listener as the shutdown sees it (*server.Server).
type drainer interface {
	Shutdown() error
	EndStreams() int
	OpenStreams() int
}

// spool is the usage meter as the shutdown sees it (*meter.Meter).
type spool interface {
	Flush(ctx context.Context) error
	Stats() meter.Stats
}

// shutdown runs a node's exit once its signal arrived; term says it was SIGTERM. It
// returns when the listener is closed and the spool is flushed as far as it goes; the
// caller then stops the snapshot sync and the usage sender.
func (s shutdownOptions) shutdown(log *slog.Logger, srv drainer, usage spool, drain *opsapi.Drain, term bool) {
	drain.Begin()
	if term && s.Delay > 0 {
		log.Info("shutting down: not ready, still serving", "for", s.Delay)
		time.Sleep(s.Delay)
	}
	log.Info("shutting down: listener closed, draining", "open_streams", srv.OpenStreams(), "drain_timeout", s.DrainTimeout)
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown() }()
	timer := time.NewTimer(s.DrainTimeout)
	select {
	case err := <-done:
		timer.Stop()
		if err != nil {
			log.Error("shutdown", "err", err)
		}
	case <-timer.C:
		n := srv.EndStreams()
		log.Warn("drain timeout: ending the streams still open", "streams", n)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			log.Error("requests still open 10s after the drain timeout; leaving them")
		}
	}
	s.flush(log, usage)
}

// flush makes every record durable, then waits until the control plane confirmed them all,
// it fails to take them, or flushTimeout passes.
func (s shutdownOptions) flush(log *slog.Logger, usage spool) {
	ctx, cancel := context.WithTimeout(context.Background(), s.FlushTimeout)
	defer cancel()
	start := time.Now()
	if err := usage.Flush(ctx); err != nil {
		log.Error("usage spool not flushed to disk", "err", err)
	}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		st := usage.Stats()
		switch {
		case st.SpoolRecords == 0:
			log.Info("usage spool confirmed by the control plane", "took", time.Since(start).Round(time.Millisecond))
			return
		case st.LastErrorAt.After(start):
			log.Warn("control plane not taking usage; records stay in the spool for the next start",
				"records", st.SpoolRecords, "err", st.LastError)
			return
		}
		select {
		case <-ctx.Done():
			log.Warn("usage not confirmed within the flush timeout; records stay in the spool for the next start",
				"records", st.SpoolRecords, "timeout", s.FlushTimeout)
			return
		case <-t.C:
		}
	}
}
