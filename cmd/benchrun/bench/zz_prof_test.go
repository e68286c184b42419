package bench

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

func TestZZHoldStack(t *testing.T) {
	if os.Getenv("PROF_HOLD") == "" {
		t.Skip()
	}
	s, err := Start(context.Background(), StackConfig{BinDir: "/tmp/prof/bin", WorkDir: t.TempDir(), Progress: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	os.WriteFile("/tmp/prof/stack.env", []byte(fmt.Sprintf("DP=%s\nBARE=%s\nSIM=%s\nKEY=%s\nDPPID=%d\nBAREPID=%d\n", s.DP.URL(), s.Bare.URL(), s.Sim.URL(), s.Key, s.DP.PID(), s.Bare.PID())), 0o644)
	time.Sleep(60 * time.Minute)
}
