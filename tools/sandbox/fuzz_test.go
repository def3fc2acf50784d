package sandbox

import (
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/agents"
)

// FuzzArgs checks that bwrapArgs never panics and that whatever it
// accepts keeps the sandbox's invariants.
func FuzzArgs(f *testing.F) {
	f.Add("/work", true, "", "PATH=/usr/bin", "sh", int64(0), false)
	f.Add("/work/../root", false, "/tmp", "A=b", "true", int64(1<<20), true)
	f.Add("proc", false, "/proc", "=", "/usr/bin/env", int64(-1), false)
	f.Add("/tmp/x", false, "/tmp/x/y", "X=\x00", "./a", int64(5), true)
	f.Add("/dev/shm", true, "/", "K=v", "../../bin/sh", int64(1<<40), false)
	f.Fuzz(func(t *testing.T, target string, readOnly bool, dir, env, argv0 string, memory int64, network bool) {
		spec := Spec{
			Limits: agents.SandboxLimits{
				Network: network,
				Memory:  memory,
				Mounts:  []agents.Mount{{Target: target, Dir: t.TempDir(), Bucket: "b", ReadOnly: readOnly}},
			},
			Dir: dir,
			Env: []string{env},
		}
		args, err := bwrapArgs(spec, []string{argv0})
		if err != nil {
			return
		}
		if args[0] != "--unshare-all" || slices.Contains(args, "--share-net") != network {
			t.Fatalf("namespaces wrong for Network %v: %q", network, args)
		}
		if path.Clean(target) != target || !path.IsAbs(target) || target == "/" ||
			within(target, "/proc") || within(target, "/dev") || visibleSystem(target) {
			t.Fatalf("accepted mount target %q", target)
		}
		if memory != 0 && memory < minMemory {
			t.Fatalf("accepted Memory %d", memory)
		}
		sep := slices.Index(args, "--")
		if sep < 0 || !slices.Contains(args[:sep], "--remount-ro") || !slices.Contains(args[:sep], "--clearenv") {
			t.Fatalf("no --remount-ro / --clearenv before the command: %q", args)
		}
		if prog := args[len(args)-1]; !path.IsAbs(prog) || strings.IndexByte(prog, 0) >= 0 {
			t.Fatalf("command %q is not an absolute path", prog)
		}
	})
}
