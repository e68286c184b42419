package sysmon

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     []string
		want    []string
		changed bool
	}{
		{"no GODEBUG", []string{"A=1"}, []string{"A=1", "GODEBUG=" + Setting}, true},
		{"empty GODEBUG", []string{"GODEBUG=", "A=1"}, []string{"GODEBUG=" + Setting, "A=1"}, true},
		{"other settings kept", []string{"GODEBUG=madvdontneed=1,gctrace=0"},
			[]string{"GODEBUG=madvdontneed=1,gctrace=0," + Setting}, true},
		{"schedtrace already set", []string{"GODEBUG=gctrace=1, schedtrace=1000"},
			[]string{"GODEBUG=gctrace=1, schedtrace=1000"}, false},
		{"a repeated GODEBUG: the first is extended, the rest dropped",
			[]string{"GODEBUG=x=1", "B=2", "GODEBUG=y=2"}, []string{"GODEBUG=x=1," + Setting, "B=2"}, true},
		{"a name that only ends in GODEBUG", []string{"MYGODEBUG=schedtrace=1"},
			[]string{"MYGODEBUG=schedtrace=1", "GODEBUG=" + Setting}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := Env(tt.env)
			if changed != tt.changed || !slices.Equal(got, tt.want) {
				t.Fatalf("Env(%q) = %q, %v; want %q, %v", tt.env, got, changed, tt.want, tt.changed)
			}
		})
	}
}

// TestKeepReexecutes runs this test binary as a helper that calls Keep: the process it
// becomes (same PID) must run with the setting added and the caller's GODEBUG kept, and
// must not execute itself again.
func TestKeepReexecutes(t *testing.T) {
	if os.Getenv("SYSMON_HELPER") != "" {
		if err := Keep(); err != nil {
			os.Stdout.WriteString("keep failed: " + err.Error() + "\n")
			os.Exit(3)
		}
		fmt.Printf("GODEBUG=%s pid=%d\n", os.Getenv("GODEBUG"), os.Getpid())
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKeepReexecutes$")
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GODEBUG=") }),
		"SYSMON_HELPER=1", "GODEBUG=madvdontneed=1")
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v: %s", err, out.String())
	}
	want := fmt.Sprintf("GODEBUG=madvdontneed=1,%s pid=%d", Setting, cmd.Process.Pid)
	if got := strings.TrimSpace(out.String()); got != want {
		t.Fatalf("helper printed %q, want %q", got, want)
	}
}
