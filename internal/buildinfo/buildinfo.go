// Package buildinfo says which build of the service runs, from what the Go toolchain stamped into
// the binary (runtime/debug.ReadBuildInfo). The version command, the start-up log line and the
// backoffice_build_info metric all say it through here, so they never disagree.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Unknown stands for what the build did not record.
const Unknown = "unknown"

// Info is what a binary knows of its build.
type Info struct {
	// Version is the main module's version: a tag (v1.2.0), a pseudo-version the toolchain
	// derives from the commit, or "(devel)" when nothing was stamped.
	Version string
	// Revision and Time are the commit built and its time (RFC 3339), Unknown when the build
	// had no version control information (-buildvcs=false, or not built from a git checkout).
	Revision, Time string
	// Modified tells that the working tree had uncommitted changes when it was built.
	Modified bool
	// GoVersion is the toolchain that built it, e.g. go1.26.8.
	GoVersion string
}

// Read is the running binary's build information.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return From(bi)
}

// From reads what bi records; a nil bi (a binary built without module support) knows only the
// Go version.
func From(bi *debug.BuildInfo) Info {
	i := Info{Version: "(devel)", Revision: Unknown, Time: Unknown, GoVersion: runtime.Version()}
	if bi == nil {
		return i
	}
	if bi.Main.Version != "" {
		i.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		i.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Revision = s.Value
		case "vcs.time":
			i.Time = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		}
	}
	return i
}

// Stamped tells whether the build recorded its commit.
func (i Info) Stamped() bool { return i.Revision != Unknown }

// Text is the version command's answer: one fact a line, and how to get the commit recorded when
// it was not.
func (i Info) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "backoffice %s\n", i.Version)
	switch {
	case !i.Stamped():
		fmt.Fprintf(&b, "revision: %s (built without version control information; build from a git checkout with: go build -buildvcs=true ./cmd/backoffice)\n", Unknown)
	case i.Modified:
		fmt.Fprintf(&b, "revision: %s, with uncommitted changes\n", i.Revision)
	default:
		fmt.Fprintf(&b, "revision: %s\n", i.Revision)
	}
	fmt.Fprintf(&b, "commit time: %s\n", i.Time)
	fmt.Fprintf(&b, "go: %s %s/%s\n", i.GoVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}
