// Package version reports what a binary was built from: the main module's version and the
// VCS revision the Go toolchain stamped into it (debug.ReadBuildInfo), for --version.
package version

import (
	"fmt"
	"io"
	"runtime/debug"
)

// Info is what --version prints.
type Info struct {
	Module    string // main module path
	Version   string // module version; "(devel)" for a build from a checkout
	Revision  string // VCS revision; "unknown" when neither stamped by the toolchain nor linked in
	Time      string // commit time (RFC 3339), empty when unknown
	Modified  bool   // the working tree had uncommitted changes
	GoVersion string
}

// linkedRevision is set with -ldflags "-X github.com/sekgate/gateway/internal/version.linkedRevision=REV"
// by `make build` and `make images`: the toolchain stamps vcs.revision only when the module
// root holds a .git directory, not in a git worktree (whose .git is a file).
var linkedRevision string

// FromBuildInfo extracts Info from build information; bi may be nil (not a module build).
// linked is the revision given at link time, used when the toolchain stamped none.
func FromBuildInfo(bi *debug.BuildInfo, linked string) Info {
	inf := Info{Version: "(devel)", Revision: "unknown"}
	if linked != "" {
		inf.Revision = linked
	}
	if bi == nil {
		return inf
	}
	inf.Module, inf.GoVersion = bi.Main.Path, bi.GoVersion
	if bi.Main.Version != "" {
		inf.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			inf.Revision = s.Value
		case "vcs.time":
			inf.Time = s.Value
		case "vcs.modified":
			inf.Modified = s.Value == "true"
		}
	}
	return inf
}

// Get returns the running binary's Info.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return FromBuildInfo(bi, linkedRevision)
}

// String is the one line --version prints after the binary's name.
func (i Info) String() string {
	rev := i.Revision
	if i.Modified {
		rev += "+modified"
	}
	s := fmt.Sprintf("%s revision %s", i.Version, rev)
	if i.Time != "" {
		s += " (" + i.Time + ")"
	}
	if i.GoVersion != "" {
		s += " " + i.GoVersion
	}
	return s
}

// Print writes "name version revision rev (time) goX" and a newline to w.
func Print(w io.Writer, name string) {
	fmt.Fprintf(w, "%s %s\n", name, Get())
}

// Requested reports whether args ask for the version (--version or -version anywhere before
// a "--"), so a binary can answer it before checking required flags.
func Requested(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--version", "-version", "--version=true", "-version=true":
			return true
		}
	}
	return false
}
