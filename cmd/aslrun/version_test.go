package main

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestBuildVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build information", nil, false, "aslrun unknown (github.com/aslrun/aslrun) " + runtime.Version()},
		{"go install @version", &debug.BuildInfo{GoVersion: "go1.25.1", Main: debug.Module{Path: "github.com/aslrun/aslrun", Version: "v1.4.0"}}, true,
			"aslrun v1.4.0 (github.com/aslrun/aslrun) go1.25.1"},
		{"a checkout", &debug.BuildInfo{GoVersion: "go1.25.1", Main: debug.Module{Path: "github.com/aslrun/aslrun", Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "a1212e1f00"}, {Key: "vcs.time", Value: "2026-11-27T18:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}, true,
			"aslrun (devel) (github.com/aslrun/aslrun, revision a1212e1f00, 2026-11-27T18:00:00Z, modified) go1.25.1"},
		{"a clean checkout", &debug.BuildInfo{GoVersion: "go1.25.1", Main: debug.Module{Path: "github.com/aslrun/aslrun", Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "a1212e1f00"}, {Key: "vcs.modified", Value: "false"}}}, true,
			"aslrun (devel) (github.com/aslrun/aslrun, revision a1212e1f00) go1.25.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := buildVersion(tc.bi, tc.ok).String(); got != tc.want {
				t.Errorf("buildVersion = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestVersionCommand: `aslrun version` and `aslrun --version` print one
// line with the Go version; arguments are refused.
func TestVersionCommand(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		code, out, errOut := invoke(t, "", args...)
		if code != 0 || !strings.HasPrefix(out, "aslrun ") || !strings.HasSuffix(out, " "+runtime.Version()+"\n") || strings.Count(out, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want one line naming the Go version", args, code, out, errOut)
		}
	}
	if code, _, errOut := invoke(t, "", "version", "extra"); code != exitUsage || !strings.Contains(errOut, `unexpected argument "extra"`) {
		t.Errorf("version extra: exit %d, stderr %q", code, errOut)
	}
}
