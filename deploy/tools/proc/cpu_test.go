package proc

import (
	"os"
	"testing"
)

func TestParseStatCPU(t *testing.T) {
	// Field 2 holds spaces and a ')' to make sure fields are counted from the last ')'.
	line := "4242 (data plane) x) S 1 4242 4242 0 -1 4194560 2000 0 0 0 250 130 0 0 20 0 9 0 100 2000000 3000 18446744073709551615\n"
	got, err := ParseStatCPU([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if got != 3.8 {
		t.Fatalf("cpu = %v, want 3.8 (380 ticks)", got)
	}
	for _, bad := range []string{"no paren", "1 (x) S 1 2"} {
		if _, err := ParseStatCPU([]byte(bad)); err == nil {
			t.Errorf("%q: want error", bad)
		}
	}
}

func TestOwnCPU(t *testing.T) {
	// Burn a little CPU so that a tick or more has passed.
	x := 0
	for i := 0; i < 200_000_000; i++ {
		x += i
	}
	_ = x
	own, err := CPUSeconds(os.Getpid())
	if err != nil || own <= 0 {
		t.Fatalf("CPUSeconds = %v, %v", own, err)
	}
	if tree := TreeCPUSeconds(os.Getpid()); tree < own {
		t.Errorf("TreeCPUSeconds %v < CPUSeconds %v", tree, own)
	}
	if busy, total := MachineCPU(); busy <= 0 || total < busy {
		t.Errorf("MachineCPU busy %v total %v", busy, total)
	}
	if _, err := CPUSeconds(-1); err == nil {
		t.Error("CPUSeconds(-1): want error")
	}
}
