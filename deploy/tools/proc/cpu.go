package proc

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
	return ParseStatCPU(b)
}

// ParseStatCPU reads utime and stime (fields 14 and 15) from a /proc/<pid>/stat line. The
// command name (field 2) may hold spaces and parentheses, so fields are counted after the
// last ')'.
func ParseStatCPU(b []byte) (float64, error) {
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

// SysSeconds returns the system (kernel) CPU time the process has used so far; 0 when its
// stat cannot be read.
func SysSeconds(pid int) float64 {
	f, err := statFields(pid)
	if err != nil {
		return 0
	}
	return ticks(f, 12)
}

// TreeCPUSeconds is the CPU time of a process, of its children that were waited for
// (cutime, cstime) and of its live children: for Postgres, the postmaster and its backends.
func TreeCPUSeconds(pid int) float64 {
	f, err := statFields(pid)
	if err != nil {
		return 0
	}
	// utime f[11], stime f[12], cutime f[13], cstime f[14].
	total := ticks(f, 11, 12, 13, 14)
	for _, c := range childrenOf(pid) {
		if cf, err := statFields(c); err == nil {
			total += ticks(cf, 11, 12)
		}
	}
	return total
}

// MachineCPU returns the busy and total CPU seconds of the whole machine so far, from the
// first line of /proc/stat (idle and iowait count as not busy).
func MachineCPU() (busy, total float64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, 0
	}
	for i, v := range f[1:] {
		n, _ := strconv.ParseUint(v, 10, 64)
		if i >= 8 { // guest and guest_nice are already in user and nice
			break
		}
		total += float64(n)
		if i != 3 && i != 4 { // idle, iowait
			busy += float64(n)
		}
	}
	return busy / clockTicks, total / clockTicks
}

// FindChild returns the first child of ppid whose command name is comm, or 0.
func FindChild(ppid int, comm string) int {
	for _, c := range childrenOf(ppid) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c))
		if err != nil {
			continue
		}
		i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if i >= 0 && j > i && string(b[i+1:j]) == comm {
			return c
		}
	}
	return 0
}

// statFields returns the fields after the command name of /proc/<pid>/stat (field 3 first).
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("stat %d: no ')'", pid)
	}
	return strings.Fields(string(b[i+1:])), nil
}

func ticks(f []string, idx ...int) float64 {
	var sum uint64
	for _, i := range idx {
		if i < len(f) {
			v, _ := strconv.ParseUint(f[i], 10, 64)
			sum += v
		}
	}
	return float64(sum) / clockTicks
}

// childrenOf returns the PIDs whose parent is ppid.
func childrenOf(ppid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	want := strconv.Itoa(ppid)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f, err := statFields(pid); err == nil && len(f) > 1 && f[1] == want {
			out = append(out, pid)
		}
	}
	return out
}
