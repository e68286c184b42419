package daemon

import (
	"context"
	"testing"
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
