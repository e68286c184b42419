package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat (100 on Linux for
// every architecture Go supports).
const clockTicks = 100

// CPUSeconds returns the user plus system CPU time the process has used so far, all threads
// included, from /proc/<pid>/stat.
func CPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}

// parseStatCPU reads utime and stime (fields 14 and 15) from a /proc/<pid>/stat line. The
// command name (field 2) may hold spaces and parentheses, so fields are counted after the
// last ')'.
func parseStatCPU(b []byte) (float64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat: no ')' in %q", b)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime is field 14 -> f[11], stime field 15 -> f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("stat: %d fields after the command name", len(f))
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("stat: utime %q stime %q", f[11], f[12])
	}
	return float64(u+s) / clockTicks, nil
}

// Memory holds a process's resident set size now and its peak, in bytes.
type Memory struct {
	RSS, Peak int64
}

// ReadMemory reads VmRSS and VmHWM from /proc/<pid>/status.
func ReadMemory(pid int) (Memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	return parseStatus(b)
}

func parseStatus(b []byte) (Memory, error) {
	var m Memory
	var seen int
	for _, line := range strings.Split(string(b), "\n") {
		var dst *int64
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			dst = &m.RSS
		case strings.HasPrefix(line, "VmHWM:"):
			dst = &m.Peak
		default:
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 || f[2] != "kB" {
			return m, fmt.Errorf("status: odd line %q", line)
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return m, fmt.Errorf("status: %q: %w", line, err)
		}
		*dst = kb << 10
		seen++
	}
	if seen != 2 {
		return m, fmt.Errorf("status: VmRSS or VmHWM missing")
	}
	return m, nil
}

// ResetPeak sets the process's VmHWM back to its current RSS (writing 5 to
// /proc/<pid>/clear_refs, Linux 4.0+), so each scenario reports its own peak. It needs the
// right to write that file (same user or root); without it peaks accumulate across
// scenarios, which the report says.
func ResetPeak(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// Usage is a process's resource use over an interval.
type Usage struct {
	CPUSeconds float64 // user + system
	PeakRSS    int64   // VmHWM at the end (bytes); since the last ResetPeak
	RSS        int64   // VmRSS at the end (bytes)
}

// Meter samples one process's CPU and memory around a measured interval.
type Meter struct {
	pid      int
	startCPU float64
	resetOK  bool
}

// StartMeter resets the peak RSS and records the CPU time so far.
func StartMeter(pid int) (*Meter, error) {
	m := &Meter{pid: pid}
	m.resetOK = ResetPeak(pid) == nil
	cpu, err := CPUSeconds(pid)
	if err != nil {
		return nil, err
	}
	m.startCPU = cpu
	return m, nil
}

// Stop returns the use since StartMeter.
func (m *Meter) Stop() (Usage, error) {
	cpu, err := CPUSeconds(m.pid)
	if err != nil {
		return Usage{}, err
	}
	mem, err := ReadMemory(m.pid)
	if err != nil {
		return Usage{}, err
	}
	return Usage{CPUSeconds: cpu - m.startCPU, PeakRSS: mem.Peak, RSS: mem.RSS}, nil
}
