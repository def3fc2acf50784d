package builtin

import (
	"context"
	"errors"
	"io"
	"os"
	"slices"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/tools/sandbox"
)

// sandboxPath is the PATH of a sandboxed command when aslrun has none.
const sandboxPath = "/usr/local/bin:/usr/bin:/bin"

// runSandboxed runs the command in a sandbox confined as limits says
// (a state's Tools.Sandbox): the command's own Dir is visible read-only
// at its path (so its program and files are), the mounts as the state
// maps them, and its environment is only PATH, HOME (/tmp), the agent's
// Env and the ASLRUN_ variables — not aslrun's. A sandbox the machine
// cannot make refuses the call with States.Permissions: a sandboxed tool
// never runs unsandboxed.
func (a *execAgent) runSandboxed(ctx context.Context, limits *agents.ToolLimits, env []string, in io.Reader, stdout, stderr io.Writer) error {
	l := *limits.Sandbox
	l.Mounts = slices.Clone(l.Mounts)
	if dir := a.cfg.Dir; dir != "" && dir != "/" && !slices.ContainsFunc(l.Mounts, func(m agents.Mount) bool { return m.Target == dir }) {
		l.Mounts = append(l.Mounts, agents.Mount{Target: dir, Dir: dir, Bucket: "the command's Dir", ReadOnly: true})
	}
	path, ok := os.LookupEnv("PATH")
	if !ok || path == "" {
		path = sandboxPath
	}
	spec := sandbox.Spec{Limits: l, Dir: a.cfg.Dir, Env: append([]string{"PATH=" + path, "HOME=/tmp"}, env...)}
	cmd, err := sandbox.Command(ctx, spec, a.cfg.Command)
	if err != nil {
		return asl.Errorf(asl.ErrPermissions, "state '%s' runs its tools sandboxed (Tools.Sandbox), and command %s cannot run in a sandbox here: %v", limits.State, a.display(), err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, stdout, stderr
	err = cmd.Run()
	if _, skipped := cmd.Cgroup(); skipped != nil {
		a.cgroupWarned.Do(func() {
			a.log.Warn("sandboxed commands run without a cgroup of their own: Memory bounds each process's address space (RLIMIT_AS), not the sandbox as a whole, and the number of processes is not bounded", "agent", a.display(), "reason", skipped.Error())
		})
	}
	if errors.Is(err, sandbox.ErrTimeout) {
		return asl.Errorf(asl.ErrTimeout, "command %s did not finish within %s (the state's Tools.Sandbox.Timeout)", a.display(), l.Timeout)
	}
	return err
}
