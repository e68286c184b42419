package benchrun

import (
	"fmt"
	"os"

	"github.com/sekgate/gateway/deploy/tools/proc"
)

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

// StartMeter resets the peak RSS and records the CPU time so far.
func StartMeter(pid int) (*Meter, error) {
	m := &Meter{pid: pid}
	m.resetOK = ResetPeak(pid) == nil
	cpu, err := proc.CPUSeconds(pid)
	if err != nil {
		return nil, err
	}
	m.startCPU = cpu
	m.startSys = proc.SysSeconds(pid)
	return m, nil
}

// Stop returns the use since StartMeter.
func (m *Meter) Stop() (Usage, error) {
	cpu, err := proc.CPUSeconds(m.pid)
	if err != nil {
		return Usage{}, err
	}
	mem, err := ReadMemory(m.pid)
	if err != nil {
		return Usage{}, err
	}
	return Usage{CPUSeconds: cpu - m.startCPU, SysSeconds: proc.SysSeconds(m.pid) - m.startSys, PeakRSS: mem.Peak, RSS: mem.RSS}, nil
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
		return proc.TreeCPUSeconds(pid)
	}
	v, _ := proc.CPUSeconds(pid)
	return v
}

func watchCPU(procs map[string]int) *cpuWatch {
	w := &cpuWatch{procs: procs, start: map[string]float64{}}
	for n, pid := range procs {
		w.start[n] = procCPU(n, pid)
	}
	w.busy, w.tot0 = proc.MachineCPU()
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
	busy, tot := proc.MachineCPU()
	pct, others := 0.0, 0.0
	if tot > w.tot0 {
		pct = 100 * (busy - w.busy) / (tot - w.tot0)
		others = max(0, 100*(busy-w.busy-mine)/(tot-w.tot0))
	}
	return out, pct, others
}
