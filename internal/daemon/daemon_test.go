package daemon

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestLogger(t *testing.T) {
	for level, ok := range map[string]bool{"debug": true, "info": true, "WARN": true, "error": true, "loud": false, "": false} {
		l, err := Logger(level)
		if (err == nil) != ok || (ok && l == nil) {
			t.Errorf("Logger(%q): %v, %v", level, l, err)
		}
	}
	l, _ := Logger("warn")
	if l.Enabled(context.Background(), -4) || !l.Enabled(context.Background(), 4) {
		t.Error("warn logger level wrong")
	}
}

// TestSignalContext: a signal ends the context with itself as the cause, so Signal names
// it; a context ended otherwise names none.
func TestSignalContext(t *testing.T) {
	ctx, stop := signalContext(context.Background(), syscall.SIGUSR1)
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the signal did not end the context")
	}
	if s := Signal(ctx); s != syscall.SIGUSR1 {
		t.Fatalf("Signal = %v, want %v", s, syscall.SIGUSR1)
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("Err = %v, want context.Canceled", ctx.Err())
	}
	ctx2, stop2 := signalContext(context.Background(), syscall.SIGUSR1)
	stop2()
	if s := Signal(ctx2); s != nil || ctx2.Err() == nil {
		t.Fatalf("a context stopped without a signal: Signal %v, Err %v", s, ctx2.Err())
	}
}
