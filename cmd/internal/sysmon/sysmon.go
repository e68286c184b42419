// Package sysmon keeps the Go runtime's system monitor ticking instead of deep-sleeping
// whenever every processor is idle.
//
// The monitor (the runtime's sysmon thread) deep-sleeps as soon as all Ps are idle, and the
// next system call of any goroutine wakes it again: a futex wake, a 20 µs sleep and another
// futex wait, each a context switch. A node serving a few thousand requests a second on a
// few cores is idle between most requests, so the monitor was woken about once per request:
// on the benchmark machine that was half of the node's context switches and about a sixth
// of its CPU per request. The runtime has no setting for this; its documented GODEBUG
// schedtrace=X (print a scheduler line every X ms) keeps the monitor out of deep sleep as
// a side effect, and it then backs off to one tick every 10 ms while nothing happens. With
// X at its largest, 2147483647 ms (24.8 days), the line is printed once when the process
// starts on a host up longer than that, and then every 24.8 days.
//
// GODEBUG is read by the runtime only at start, so Keep re-executes the process (same PID,
// arguments and environment, plus the setting) before anything else runs.
package sysmon

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// Setting is the GODEBUG item Keep adds.
const Setting = "schedtrace=2147483647"

// Env returns env with Setting added to GODEBUG, and false when there is nothing to add:
// GODEBUG already sets schedtrace (the operator's choice wins).
func Env(env []string) ([]string, bool) {
	out := make([]string, 0, len(env)+1)
	found := false
	for _, kv := range env {
		v, ok := strings.CutPrefix(kv, "GODEBUG=")
		if !ok {
			out = append(out, kv)
			continue
		}
		for _, item := range strings.Split(v, ",") {
			if strings.HasPrefix(strings.TrimSpace(item), "schedtrace=") {
				return env, false
			}
		}
		if found { // a repeated GODEBUG: the runtime reads the first
			continue
		}
		found = true
		if v == "" {
			out = append(out, "GODEBUG="+Setting)
		} else {
			out = append(out, "GODEBUG="+v+","+Setting)
		}
	}
	if !found {
		out = append(out, "GODEBUG="+Setting)
	}
	return out, true
}

// Keep re-executes the running program with Setting added to GODEBUG, unless GODEBUG
// already sets schedtrace. It returns only when there was nothing to do (nil) or the
// re-execution failed (the program can go on without it).
func Keep() error {
	env, ok := Env(os.Environ())
	if !ok {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("sysmon: find own executable: %w", err)
	}
	if err := syscall.Exec(exe, os.Args, env); err != nil {
		return fmt.Errorf("sysmon: re-execute %s: %w", exe, err)
	}
	return nil
}
