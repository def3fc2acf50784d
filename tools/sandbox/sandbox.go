package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aslrun/aslrun/agents"
)

// ErrTimeout is wrapped by the error Wait returns when the sandbox was
// killed because Limits.Timeout passed.
var ErrTimeout = errors.New("sandbox timeout passed")

// Spec is what a sandboxed process gets.
type Spec struct {
	// Limits is what the state's Tools block asks for: network, memory,
	// CPU, timeout and the mounted buckets.
	Limits agents.SandboxLimits
	// Dir is the working directory inside the sandbox (an absolute path
	// that exists there: "/", /tmp, a system directory or a mount's
	// Target or below). Empty means the first mount's Target, or "/"
	// without mounts.
	Dir string
	// Env is the whole environment of the process, "KEY=value" each;
	// nothing is inherited from the server. Its PATH is where a command
	// name without a slash is looked up inside the sandbox; without one,
	// defaultPath.
	Env []string
	// CgroupParent is a cgroup v2 directory delegated to the server (such
	// as /sys/fs/cgroup/aslrun.slice/sandboxes), with memory and pids in
	// its cgroup.subtree_control, under which each process gets a cgroup
	// of its own. Empty means the cgroup the server runs in, which
	// qualifies only where cgroup v2 is mounted at /sys/fs/cgroup and that
	// cgroup enables memory and pids for its children. A parent that does
	// not qualify is skipped, not refused: Cmd.Cgroup says why.
	CgroupParent string
}

const (
	// defaultPath is the PATH inside the sandbox when Spec.Env has none
	// (also the one bwrap's execvp uses without a PATH).
	defaultPath = "/usr/local/bin:/usr/bin:/bin"
	// prlimitPath is util-linux prlimit, visible inside the sandbox
	// because /usr is.
	prlimitPath = "/usr/bin/prlimit"
	// minMemory is the smallest Memory accepted: below it nothing starts.
	minMemory = 1 << 20
	// waitDelay is how long Wait waits for the sandbox's pipes to close
	// after bwrap ended (see exec.Cmd.WaitDelay).
	waitDelay = 5 * time.Second
)

// systemDirs are the machine's directories the sandbox sees read-only
// (or as the same symlink), each that exists.
var systemDirs = []string{"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64"}

// hidden are files and folders under systemDirs masked in the sandbox
// (by /dev/null or an empty tmpfs), each that exists.
var hidden = []string{"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/ssl/private"}

// Cmd is a sandboxed process built by Command, not yet started. Set the
// embedded exec.Cmd's Stdin, Stdout and Stderr (or use its pipes) before
// starting it, and start and wait through Cmd's own Start, Wait, Run,
// Output or CombinedOutput — not the embedded exec.Cmd's — so that the
// timeout and the cgroup are applied and released. Its Path and Args
// are bwrap's. A Cmd runs once and is not safe for concurrent use.
type Cmd struct {
	*exec.Cmd

	limits       agents.SandboxLimits
	cgroupParent string
	cancel       context.CancelCauseFunc
	ctx          context.Context
	timer        *time.Timer
	started      bool
	// cgroup is the directory of the process's cgroup, or "" with
	// cgroupErr saying why there is none.
	cgroup    string
	cgroupErr error
}

// Cgroup returns, once Cmd has started, the cgroup directory the process
// runs in, or "" and the reason it runs in none.
func (c *Cmd) Cgroup() (dir string, skipped error) {
	if !c.started {
		return "", errors.New("sandbox: not started")
	}
	return c.cgroup, c.cgroupErr
}

// Start starts the sandbox: it puts it in a cgroup when one is usable
// (see Spec.CgroupParent) and starts the Timeout's clock.
func (c *Cmd) Start() error {
	if c.started {
		return errors.New("sandbox: already started")
	}
	c.started = true
	closeFD := c.enterCgroup()
	err := c.Cmd.Start()
	closeFD()
	if err != nil {
		c.cancel(nil)
		if c.cgroup != "" {
			err = fmt.Errorf("sandbox: starting %s in cgroup %s: %w", c.Path, c.cgroup, err)
			return errors.Join(err, c.leaveCgroup())
		}
		return fmt.Errorf("sandbox: starting %s: %w", c.Path, err)
	}
	if d := c.limits.Timeout; d > 0 {
		c.timer = time.AfterFunc(d, func() { c.cancel(ErrTimeout) })
	}
	return nil
}

// Wait waits for the sandbox to end, then removes its cgroup. Its error
// wraps ErrTimeout when Limits.Timeout killed it, the context's error
// when the context did, and an *exec.ExitError when the process failed.
func (c *Cmd) Wait() error {
	if !c.started {
		return errors.New("sandbox: not started")
	}
	err := c.Cmd.Wait()
	if c.timer != nil {
		c.timer.Stop()
	}
	switch cause := context.Cause(c.ctx); {
	case err == nil:
	case errors.Is(cause, ErrTimeout):
		err = fmt.Errorf("sandbox: %w (%v): %w", ErrTimeout, c.limits.Timeout, err)
	case cause != nil && !errors.Is(err, cause):
		err = fmt.Errorf("sandbox: %w: %w", cause, err)
	default:
		err = fmt.Errorf("sandbox: %w", err)
	}
	c.cancel(nil)
	return errors.Join(err, c.leaveCgroup())
}

// Run starts the sandbox and waits for it to end.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}

// Output runs the sandbox and returns its standard output.
func (c *Cmd) Output() ([]byte, error) {
	if c.Stdout != nil {
		return nil, errors.New("sandbox: Stdout already set")
	}
	var out bytes.Buffer
	c.Stdout = &out
	err := c.Run()
	return out.Bytes(), err
}

// CombinedOutput runs the sandbox and returns its standard output and
// standard error together.
func (c *Cmd) CombinedOutput() ([]byte, error) {
	if c.Stdout != nil || c.Stderr != nil {
		return nil, errors.New("sandbox: Stdout or Stderr already set")
	}
	var out bytes.Buffer
	c.Stdout = &out
	c.Stderr = &out
	err := c.Run()
	return out.Bytes(), err
}

// bwrapArgs checks spec and argv and returns bwrap's arguments (without
// the program name) that run argv so confined.
func bwrapArgs(spec Spec, argv []string) ([]string, error) {
	l := spec.Limits
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("sandbox: no command to run")
	}
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, fmt.Errorf("sandbox: argument %d %q contains a NUL byte", i, a)
		}
	}
	switch {
	case l.Memory < 0:
		return nil, fmt.Errorf("sandbox: Memory %d is negative", l.Memory)
	case l.Memory > 0 && l.Memory < minMemory:
		return nil, fmt.Errorf("sandbox: Memory %d bytes is below the least a process needs (1 MiB)", l.Memory)
	case l.CPU < 0:
		return nil, fmt.Errorf("sandbox: CPU %v is negative", l.CPU)
	case l.Timeout < 0:
		return nil, fmt.Errorf("sandbox: Timeout %v is negative", l.Timeout)
	}

	args := []string{"--unshare-all"}
	if l.Network {
		args = append(args, "--share-net")
	}
	args = append(args, "--die-with-parent", "--new-session")
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
			continue
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(d)
			if err != nil {
				return nil, fmt.Errorf("sandbox: system directory: %w", err)
			}
			args = append(args, "--symlink", target, d)
		case fi.IsDir():
			args = append(args, "--ro-bind", d, d)
		}
	}
	for _, h := range hidden {
		fi, err := os.Stat(h)
		switch {
		case err != nil:
			continue
		case fi.IsDir():
			args = append(args, "--tmpfs", h, "--remount-ro", h)
		default:
			args = append(args, "--ro-bind", os.DevNull, h)
		}
	}
	if l.Network {
		// A resolv.conf symlinked out of /etc (systemd-resolved's
		// /run/systemd/resolve/stub-resolv.conf) is made visible.
		if real, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && !visibleSystem(real) {
			args = append(args, "--ro-bind", real, real)
		}
	}
	args = append(args, "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp")

	for i, m := range l.Mounts {
		where := fmt.Sprintf("sandbox: mount %d (bucket %q)", i, m.Bucket)
		if err := checkTarget(m.Target); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		for _, o := range l.Mounts[:i] {
			if within(m.Target, o.Target) || within(o.Target, m.Target) {
				return nil, fmt.Errorf("%s: target %q overlaps the target %q of bucket %q", where, m.Target, o.Target, o.Bucket)
			}
		}
		if !path.IsAbs(m.Dir) {
			return nil, fmt.Errorf("%s: folder %q is not an absolute path", where, m.Dir)
		}
		fi, err := os.Stat(m.Dir)
		if err != nil {
			return nil, fmt.Errorf("%s: folder: %w", where, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("%s: folder %q is not a directory", where, m.Dir)
		}
		bind := "--bind"
		if m.ReadOnly {
			bind = "--ro-bind"
		}
		args = append(args, bind, m.Dir, m.Target)
	}
	args = append(args, "--remount-ro", "/")

	dir := spec.Dir
	if dir == "" {
		dir = "/"
		if len(l.Mounts) > 0 {
			dir = l.Mounts[0].Target
		}
	}
	if _, ok := hostPath(l.Mounts, dir); !ok && dir != "/" && (!within(dir, "/tmp") || path.Clean(dir) != dir) {
		return nil, fmt.Errorf("sandbox: working directory %q is not an absolute clean path the sandbox sees (/, /tmp, a system directory or a mount)", dir)
	}
	args = append(args, "--chdir", dir, "--clearenv")

	pathEnv := defaultPath
	for i, kv := range spec.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.IndexByte(kv, 0) >= 0 {
			return nil, fmt.Errorf("sandbox: environment entry %d %q is not KEY=value", i, kv)
		}
		if k == "PATH" {
			pathEnv = v
		}
		args = append(args, "--setenv", k, v)
	}

	prog, err := lookPath(l.Mounts, dir, pathEnv, argv[0])
	if err != nil {
		return nil, err
	}
	args = append(args, "--")
	if l.Memory > 0 || l.CPU > 0 {
		if _, err := os.Stat(prlimitPath); err != nil {
			return nil, fmt.Errorf("sandbox: memory and CPU limits need util-linux prlimit: %w", err)
		}
		args = append(args, prlimitPath)
		if l.Memory > 0 {
			args = append(args, "--as="+strconv.FormatInt(l.Memory, 10))
		}
		if l.CPU > 0 {
			s := int64((l.CPU + time.Second - 1) / time.Second)
			args = append(args, fmt.Sprintf("--cpu=%d:%d", s, s+1))
		}
		args = append(args, "--")
	}
	args = append(args, prog)
	return append(args, argv[1:]...), nil
}

// checkTarget says why t cannot be a mount's target.
func checkTarget(t string) error {
	switch {
	case !path.IsAbs(t):
		return fmt.Errorf("target %q is not an absolute path", t)
	case path.Clean(t) != t:
		return fmt.Errorf("target %q is not clean (want %q)", t, path.Clean(t))
	case t == "/":
		return errors.New("target is the root")
	case strings.IndexByte(t, 0) >= 0:
		return fmt.Errorf("target %q contains a NUL byte", t)
	case within(t, "/proc"), within(t, "/dev"):
		return fmt.Errorf("target %q is in /proc or /dev", t)
	}
	for _, d := range systemDirs {
		if within(t, d) {
			return fmt.Errorf("target %q is in the read-only system directory %s", t, d)
		}
	}
	return nil
}

// within reports whether p is dir or below it (both clean and absolute).
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// visibleSystem reports whether the machine's path p is seen at the same
// path inside the sandbox (it is under a system directory).
func visibleSystem(p string) bool {
	for _, d := range systemDirs {
		if within(p, d) {
			return true
		}
	}
	return false
}

// hostPath returns the machine's path of the sandbox's path p (absolute
// and clean), and false when p is not on a system directory or a mount.
func hostPath(mounts []agents.Mount, p string) (string, bool) {
	if !path.IsAbs(p) || path.Clean(p) != p {
		return "", false
	}
	for _, m := range mounts {
		if within(p, m.Target) {
			return m.Dir + strings.TrimPrefix(p, m.Target), true
		}
	}
	return p, visibleSystem(p)
}

// lookPath returns the sandbox's path of the program name runs, looking
// a name without a slash up in pathEnv and a relative one in dir: it
// must be an executable regular file the sandbox sees.
func lookPath(mounts []agents.Mount, dir, pathEnv, name string) (string, error) {
	if strings.Contains(name, "/") {
		p := path.Clean(name)
		if !path.IsAbs(p) {
			p = path.Join(dir, p)
		}
		if err := executable(mounts, p); err != nil {
			return "", fmt.Errorf("sandbox: command %q: %w", name, err)
		}
		return p, nil
	}
	for _, d := range strings.Split(pathEnv, ":") {
		if !path.IsAbs(d) {
			continue
		}
		p := path.Join(d, name)
		if executable(mounts, p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("sandbox: command %q is not an executable file in the sandbox's PATH %q", name, pathEnv)
}

// executable says why the sandbox's path p is not an executable file the
// sandbox sees.
func executable(mounts []agents.Mount, p string) error {
	h, ok := hostPath(mounts, p)
	if !ok {
		return fmt.Errorf("%s is outside what the sandbox sees", p)
	}
	fi, err := os.Stat(h)
	switch {
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", p)
	case fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s is not executable", p)
	}
	return nil
}
