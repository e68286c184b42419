package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/sekgate/gateway/internal/proc"
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
type Memory = proc.Memory

// ReadMemory reads VmRSS and VmHWM from /proc/<pid>/status.
func ReadMemory(pid int) (Memory, error) { return proc.ReadMemory(pid) }

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
	SysSeconds float64 // system (kernel) part
	PeakRSS    int64   // VmHWM at the end (bytes); since the last ResetPeak
	RSS        int64   // VmRSS at the end (bytes)
}

// Meter samples one process's CPU and memory around a measured interval.
type Meter struct {
	pid      int
	startCPU float64
	startSys float64
	resetOK  bool
}

func sysSeconds(pid int) float64 {
	f, err := statFields(pid)
	if err != nil {
		return 0
	}
	return ticks(f, 12)
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
	m.startSys = sysSeconds(pid)
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
	return Usage{CPUSeconds: cpu - m.startCPU, SysSeconds: sysSeconds(m.pid) - m.startSys, PeakRSS: mem.Peak, RSS: mem.RSS}, nil
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

// cpuWatch records the CPU of the processes that share the machine over an interval.
type cpuWatch struct {
	procs      map[string]int // name -> pid; CPU of the process and its children
	start      map[string]float64
	busy, tot0 float64
}

// procCPU is a process's CPU so far; for Postgres the postmaster's whole tree.
func procCPU(name string, pid int) float64 {
	if name == "postgres" {
		return TreeCPUSeconds(pid)
	}
	v, _ := CPUSeconds(pid)
	return v
}

func watchCPU(procs map[string]int) *cpuWatch {
	w := &cpuWatch{procs: procs, start: map[string]float64{}}
	for n, pid := range procs {
		w.start[n] = procCPU(n, pid)
	}
	w.busy, w.tot0 = MachineCPU()
	return w
}

// stop returns each process's CPU seconds since watchCPU and the machine's busy share (%).
func (w *cpuWatch) stop() (map[string]float64, float64) {
	out, pct, _ := w.stopOthers()
	return out, pct
}

// stopOthers is stop plus the share (%) of the machine busy with processes not watched:
// other work sharing the cores.
func (w *cpuWatch) stopOthers() (map[string]float64, float64, float64) {
	out := map[string]float64{}
	mine := 0.0
	for n, pid := range w.procs {
		out[n] = procCPU(n, pid) - w.start[n]
		mine += out[n]
	}
	busy, tot := MachineCPU()
	pct, others := 0.0, 0.0
	if tot > w.tot0 {
		pct = 100 * (busy - w.busy) / (tot - w.tot0)
		others = max(0, 100*(busy-w.busy-mine)/(tot-w.tot0))
	}
	return out, pct, others
}

// findChild returns the first child of ppid whose command name is comm, or 0.
func findChild(ppid int, comm string) int {
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
