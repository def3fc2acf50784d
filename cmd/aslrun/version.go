package main

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
)

// versionInfo is what `aslrun version` prints: the module's version (as
// `go install …@VERSION` stamps it, "(devel)" for a build from a
// checkout), the VCS revision the build recorded (empty when it recorded
// none, as `go run` and test binaries do) and whether the tree had
// uncommitted changes, and the Go version that built it.
type versionInfo struct {
	Module, Version, Revision, Time string
	Modified                        bool
	Go                              string
}

// buildVersion reads versionInfo from the build information of the
// running binary; bi nil (no build information) leaves the module's
// version "unknown".
func buildVersion(bi *debug.BuildInfo, ok bool) versionInfo {
	v := versionInfo{Module: "github.com/aslrun/aslrun", Version: "unknown", Go: runtime.Version()}
	if !ok || bi == nil {
		return v
	}
	if bi.Main.Path != "" {
		v.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		v.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the line `aslrun version` prints:
// "aslrun v1.2.0 (github.com/aslrun/aslrun, revision 0123abcd…, 2026-11-27T18:00:00Z, modified) go1.25.1".
func (v versionInfo) String() string {
	s := "aslrun " + v.Version + " (" + v.Module
	if v.Revision != "" {
		s += ", revision " + v.Revision
		if v.Time != "" {
			s += ", " + v.Time
		}
		if v.Modified {
			s += ", modified"
		}
	}
	return s + ") " + v.Go
}

func cmdVersion(_ context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	pos, err := parseFlags(fs, "version", args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErrorf("version: unexpected argument %q", pos[0])
	}
	_, err = fmt.Fprintln(c.stdout, buildVersion(debug.ReadBuildInfo()))
	return err
}
