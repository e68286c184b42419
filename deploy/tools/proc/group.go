package proc

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Group is the set of processes a harness started, stopped together in reverse order.
// It is not safe for concurrent use; its processes are.
type Group struct {
	// BinDir holds the executables.
	BinDir string
	// LogDir receives each process's <name>.log.
	LogDir string
	// Env is added to every process's environment before its own Spec.Env (runtime
	// settings such as GODEBUG and GOGC that a comparison must give every process alike).
	Env []string

	procs []*Proc
}

// Prepare checks that BinDir holds every one of bins and creates LogDir.
func (g *Group) Prepare(bins ...string) error {
	for _, b := range bins {
		if _, err := os.Stat(filepath.Join(g.BinDir, b)); err != nil {
			return fmt.Errorf("binary %s: %w (build with make build first)", b, err)
		}
	}
	return os.MkdirAll(g.LogDir, 0o755)
}

// Start starts BinDir/bin as name, listening on addr, and adds it to the group.
func (g *Group) Start(name, bin, addr string, args ...string) (*Proc, error) {
	return g.StartSpec(Spec{Name: name, Bin: bin, Addr: addr, Args: args})
}

// StartSpec starts sp with its Bin taken as a name in BinDir and its log in LogDir, and adds
// it to the group.
func (g *Group) StartSpec(sp Spec) (*Proc, error) {
	sp.Bin, sp.LogDir = filepath.Join(g.BinDir, sp.Bin), g.LogDir
	sp.Env = append(append([]string(nil), g.Env...), sp.Env...)
	p, err := Start(sp)
	if err != nil {
		return nil, err
	}
	g.procs = append(g.procs, p)
	return p, nil
}

// Alive returns an error naming the first process of the group that has exited.
func (g *Group) Alive() error {
	for _, p := range g.procs {
		if p.Exited() {
			return fmt.Errorf("%s exited (%v); see its log", p.Name, p.Err())
		}
	}
	return nil
}

// StopAll stops every running process, the last started first (SIGTERM, then SIGKILL
// after grace), and empties the group.
func (g *Group) StopAll(grace time.Duration) {
	for i := len(g.procs) - 1; i >= 0; i-- {
		if !g.procs[i].Exited() {
			g.procs[i].Stop(grace)
		}
	}
	g.procs = nil
}
