package proc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

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
	return ParseStatus(b)
}

// ParseStatus reads VmRSS and VmHWM from the text of a /proc/<pid>/status file.
func ParseStatus(b []byte) (Memory, error) {
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
